/* registry.c - ncid <-> session bindings. */
#include "registry.h"

#include <pthread.h>
#include <stdlib.h>

/* netCDF-C numbers datasets in the high 16 bits of an ncid, groups in the low 16 (nc4internal.h ID_SHIFT). */
#define DATASET_OF(ncid) ((unsigned)(ncid) >> 16)

typedef struct binding {
    unsigned dataset;
    mzn_session *session;
} binding;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static binding *bindings;
static size_t n_bindings, cap_bindings;
static __thread mzn_open_call *current_call;

void mzn_registry_begin_call(mzn_open_call *call) {
    call->opened = NULL;
    call->outer = current_call;
    current_call = call;
}

void mzn_registry_note_opened(mzn_session *s) {
    if (current_call) current_call->opened = s;
}

mzn_session *mzn_registry_end_call(mzn_open_call *call, int status, int ncid) {
    current_call = call->outer;
    if (status != 0 || !call->opened) return NULL;
    pthread_mutex_lock(&lock);
    if (n_bindings == cap_bindings) {
        size_t cap = cap_bindings ? cap_bindings * 2 : 8;
        binding *b = realloc(bindings, cap * sizeof *b);
        if (!b) {
            /* Without a binding only nc_sync commits and chunk write-back are lost for this dataset;
             * close still publishes. */
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        bindings = b;
        cap_bindings = cap;
    }
    bindings[n_bindings].dataset = DATASET_OF(ncid);
    bindings[n_bindings++].session = call->opened;
    pthread_mutex_unlock(&lock);
    return call->opened;
}

mzn_session *mzn_registry_find(int ncid) {
    mzn_session *s = NULL;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_bindings; i++)
        if (bindings[i].dataset == DATASET_OF(ncid)) {
            s = bindings[i].session;
            break;
        }
    pthread_mutex_unlock(&lock);
    return s;
}

void mzn_registry_forget(mzn_session *s) {
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_bindings;) {
        if (bindings[i].session == s) bindings[i] = bindings[--n_bindings];
        else i++;
    }
    pthread_mutex_unlock(&lock);
    /* A session that fails inside the open call that created it must not be bound afterwards. */
    for (mzn_open_call *c = current_call; c; c = c->outer)
        if (c->opened == s) c->opened = NULL;
}
