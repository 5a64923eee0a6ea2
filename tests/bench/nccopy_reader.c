/*
 * nccopy_reader.c - the "full read" of the netCDF benchmark (nccopy_bench.py): opens a dataset with the
 * netCDF-C API and reads every variable of every group completely, in slabs of whole chunks along the
 * first dimension, with nc_get_vara in the variable's own type. Prints one JSON line with the number of
 * bytes read and a checksum of them, so that the benchmark can check both stores returned the same data.
 *
 * usage: nccopy_reader DATASET       (a path or URL; run it under `mmzip run` for .zip archives)
 */
#include <netcdf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALL(x)                                                                                             \
    do {                                                                                                   \
        int rc_ = (x);                                                                                     \
        if (rc_) {                                                                                         \
            fprintf(stderr, "nccopy_reader: %s: %s\n", #x, nc_strerror(rc_));                             \
            exit(1);                                                                                       \
        }                                                                                                  \
    } while (0)

typedef struct totals {
    uint64_t bytes;
    uint64_t checksum;
} totals;

/* An order-dependent checksum of the bytes: FNV-1a over 8-byte words in four interleaved lanes (word i goes
 * to lane i % 4), folded into the running value at the end of each call, then the tail. One chain of
 * multiplies would cost about 0.1 s per 512 MiB on this machine, a large, equal share of both stores' read
 * time that has nothing to do with either; four independent chains take a quarter of that. */
static void add_bytes(totals *t, const unsigned char *p, size_t n) {
    const uint64_t prime = 1099511628211ull;
    uint64_t lane[4] = {t->checksum, t->checksum ^ 1, t->checksum ^ 2, t->checksum ^ 3};
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, 32);
        for (int k = 0; k < 4; k++) lane[k] = (lane[k] ^ w[k]) * prime;
    }
    uint64_t h = t->checksum;
    for (int k = 0; k < 4; k++) h = (h ^ lane[k]) * prime;
    for (; i < n; i++) h = (h ^ p[i]) * prime;
    t->checksum = h;
    t->bytes += n;
}

static void read_variable(int grp, int var, totals *t) {
    int ndims, dimids[NC_MAX_VAR_DIMS], storage;
    nc_type type;
    size_t type_size, len[NC_MAX_VAR_DIMS], chunks[NC_MAX_VAR_DIMS];
    CALL(nc_inq_var(grp, var, NULL, &type, &ndims, dimids, NULL));
    if (type > NC_MAX_ATOMIC_TYPE || type == NC_STRING) return;
    CALL(nc_inq_type(grp, type, NULL, &type_size));
    size_t row = type_size;
    for (int d = 0; d < ndims; d++) {
        CALL(nc_inq_dimlen(grp, dimids[d], &len[d]));
        if (d > 0) row *= len[d];
    }
    size_t slab = 1;
    if (ndims > 0 && nc_inq_var_chunking(grp, var, &storage, chunks) == NC_NOERR && storage == NC_CHUNKED)
        slab = chunks[0];
    size_t outer = ndims > 0 ? len[0] : 1;
    unsigned char *buf = malloc(row * slab + 1);
    if (!buf) exit(1);
    size_t start[NC_MAX_VAR_DIMS] = {0}, count[NC_MAX_VAR_DIMS];
    for (int d = 1; d < ndims; d++) count[d] = len[d];
    for (size_t i = 0; i < outer; i += slab) {
        size_t n = outer - i < slab ? outer - i : slab;
        start[0] = i;
        count[0] = n;
        CALL(nc_get_vara(grp, var, start, count, buf));
        add_bytes(t, buf, row * n);
    }
    free(buf);
}

static void read_group(int grp, totals *t) {
    int nvars, ngrps;
    CALL(nc_inq_varids(grp, &nvars, NULL));
    int *vars = malloc(((size_t)nvars + 1) * sizeof *vars);
    CALL(nc_inq_varids(grp, &nvars, vars));
    for (int i = 0; i < nvars; i++) read_variable(grp, vars[i], t);
    free(vars);
    CALL(nc_inq_grps(grp, &ngrps, NULL));
    int *grps = malloc(((size_t)ngrps + 1) * sizeof *grps);
    CALL(nc_inq_grps(grp, &ngrps, grps));
    for (int i = 0; i < ngrps; i++) read_group(grps[i], t);
    free(grps);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: nccopy_reader DATASET\n");
        return 2;
    }
    int nc;
    totals t = {0, 1469598103934665603ull};
    CALL(nc_open(argv[1], NC_NOWRITE, &nc));
    read_group(nc, &t);
    CALL(nc_close(nc));
    printf("{\"bytes\": %llu, \"checksum\": \"%016llx\"}\n", (unsigned long long)t.bytes,
           (unsigned long long)t.checksum);
    return 0;
}
