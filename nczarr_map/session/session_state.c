/* session_state.c - a session's owned byte strings and entry names (see session_state.h). */
#include "session_state.h"

#include <stdlib.h>
#include <string.h>

mzn_blob *mzn_blob_new(const void *bytes, size_t len) {
    mzn_blob *b = malloc(sizeof *b + (len ? len : 1));
    if (!b) return NULL;
    b->len = len;
    if (len) memcpy(b->bytes, bytes, len);
    return b;
}

char *mzn_session_entry_name(const mzn_session *s, const char *key) {
    if (!key || key[0] != '/') return NULL;
    size_t klen = strlen(key + 1);
    char *name = malloc(s->prefix_len + klen + 1);
    if (!name) return NULL;
    memcpy(name, s->prefix, s->prefix_len);
    memcpy(name + s->prefix_len, key + 1, klen + 1);
    return name;
}
