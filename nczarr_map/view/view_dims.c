/* view_dims.c - the dimension-name registry and DataAxesFormats naming (see view_dims.h). */
#include "view_dims.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dim_entry {
    char *name;
    uint64_t length;
} dim_entry;

struct mzv_dims {
    dim_entry *entries;
    size_t count, cap;
};

mzv_dims *mzv_dims_new(void) { return calloc(1, sizeof(mzv_dims)); }

void mzv_dims_free(mzv_dims *d) {
    if (!d) return;
    for (size_t i = 0; i < d->count; i++) free(d->entries[i].name);
    free(d->entries);
    free(d);
}

/* Linear search: an archive has at most a few thousand dimension names, looked up once each at open. */
static dim_entry *find(mzv_dims *d, const char *name) {
    for (size_t i = 0; i < d->count; i++)
        if (strcmp(d->entries[i].name, name) == 0) return &d->entries[i];
    return NULL;
}

static const char *add(mzv_dims *d, const char *name, uint64_t length) {
    if (d->count == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 16;
        dim_entry *e = realloc(d->entries, cap * sizeof *e);
        if (!e) return NULL;
        d->entries = e;
        d->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return NULL;
    d->entries[d->count++] = (dim_entry){copy, length};
    return copy;
}

/* netCDF names cannot contain '/' (NCZarr splits dimension paths on it) and cannot be empty. */
static void sanitize(const char *wanted, uint64_t length, char *out, size_t size) {
    if (!wanted || !*wanted) {
        snprintf(out, size, "_zdim_%" PRIu64, length);
        return;
    }
    snprintf(out, size, "%s", wanted);
    for (char *p = out; *p; p++)
        if (*p == '/') *p = '_';
}

const char *mzv_dims_claim(mzv_dims *d, const char *wanted, uint64_t length) {
    char base[MZV_DIM_NAME_MAX], name[MZV_DIM_NAME_MAX + 48];
    sanitize(wanted, length, base, sizeof base);
    dim_entry *e = find(d, base);
    if (!e) return add(d, base, length);
    if (e->length == length) return e->name;
    snprintf(name, sizeof name, "%s_%" PRIu64, base, length);
    for (unsigned n = 2;; n++) {
        e = find(d, name);
        if (!e) return add(d, name, length);
        if (e->length == length) return e->name;
        snprintf(name, sizeof name, "%s_%" PRIu64 "_%u", base, length, n);
    }
}

/* Splits path into at most 6 components; returns their number, or -1 if there are more. */
static int split(const char *path, char parts[6][MZV_DIM_NAME_MAX]) {
    int n = 0;
    const char *p = path;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 6 || len == 0 || len >= MZV_DIM_NAME_MAX) return -1;
        memcpy(parts[n], p, len);
        parts[n][len] = '\0';
        n++;
        if (!slash) return n;
        p = slash + 1;
    }
}

static int joined(char *out, const char *a, const char *b, const char *c, const char *suffix) {
    int n = c ? snprintf(out, MZV_DIM_NAME_MAX, "%s_%s_%s_%s", a, b, c, suffix)
              : snprintf(out, MZV_DIM_NAME_MAX, "%s_%s_%s", a, b, suffix);
    return n > 0 && n < MZV_DIM_NAME_MAX;
}

int mzv_daf_dim_names(const char *path, int rank, char names[][MZV_DIM_NAME_MAX]) {
    char parts[6][MZV_DIM_NAME_MAX];
    int n = split(path, parts);
    if (n < 1) return 0;
    if (n == 1 && rank == 1 && strcmp(parts[0], "daf") == 0) {
        snprintf(names[0], MZV_DIM_NAME_MAX, "daf_version");
        return 1;
    }
    if (n == 2 && rank == 1 && strcmp(parts[0], "scalars") == 0) {
        snprintf(names[0], MZV_DIM_NAME_MAX, "_scalar_");
        return 1;
    }
    if (n == 2 && rank == 1 && strcmp(parts[0], "axes") == 0) {
        snprintf(names[0], MZV_DIM_NAME_MAX, "%s", parts[1]);
        return 1;
    }
    if (strcmp(parts[0], "vectors") == 0 && rank == 1) {
        if (n == 3) {
            snprintf(names[0], MZV_DIM_NAME_MAX, "%s", parts[1]);
            return 1;
        }
        if (n == 4 && (strcmp(parts[3], "nzind") == 0 || strcmp(parts[3], "nzval") == 0))
            return joined(names[0], parts[1], parts[2], NULL, "nnz");
        return 0;
    }
    if (strcmp(parts[0], "matrices") == 0) {
        if (n == 4 && rank == 2) {
            snprintf(names[0], MZV_DIM_NAME_MAX, "%s", parts[2]);
            snprintf(names[1], MZV_DIM_NAME_MAX, "%s", parts[1]);
            return 1;
        }
        if (n == 5 && rank == 1) {
            if (strcmp(parts[4], "colptr") == 0) return joined(names[0], parts[1], parts[2], parts[3], "colptr");
            if (strcmp(parts[4], "rowval") == 0 || strcmp(parts[4], "nzval") == 0)
                return joined(names[0], parts[1], parts[2], parts[3], "nnz");
        }
    }
    return 0;
}
