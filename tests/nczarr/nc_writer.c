/*
 * nc_writer.c - a netCDF C program that writes into an existing dataset the ways applications do, for the
 * tests of netCDF-C 4.9's write bugs (test_write_bugs.py). It uses only the public netCDF API, so that it
 * runs the same against a directory store (the bugs show) and, under `mmzip run`, against an archive.
 *
 * usage:
 *   nc_writer update DATASET   every put form into existing chunks of grid(6,8) and line(10), with an
 *                              nc_sync in the middle, and one put into sub/deep(6) through the group's
 *                              ncid (the values are mirrored in test_write_bugs.py)
 *   nc_writer touch DATASET    nc_open(NC_WRITE) then nc_close, nothing else
 *   nc_writer put-one DATASET VAR
 *                              nc_put_var1_int(VAR, index 0, 12345), then close; exits 3 if the put fails
 *   nc_writer put-att DATASET VAR NAME TEXT
 *                              nc_put_att_text(VAR, NAME, TEXT) (VAR "/" for a global attribute), then close
 *   nc_writer append-record DATASET VAR VALUE
 *                              writes one record of VAR (int, first dimension unlimited, rank <= 4) at index
 *                              = the current length of that dimension, every element VALUE, then close
 *   nc_writer append-records DATASET VALUE
 *                              one record of every root variable whose first dimension is the root's
 *                              unlimited dimension, at index = its current length: element k of the
 *                              record is VALUE + k / 4 (as double; rank <= 4), then close
 *   nc_writer abort-create DATASET nosync|sync
 *                              nc_create (NC_CLOBBER), a variable x(4) written, optionally nc_sync, nc_abort
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALL(x)                                                                                             \
    do {                                                                                                   \
        int rc_ = (x);                                                                                     \
        if (rc_) {                                                                                         \
            fprintf(stderr, "nc_writer: %s: %s\n", #x, nc_strerror(rc_));                                 \
            exit(1);                                                                                       \
        }                                                                                                  \
    } while (0)

static int update(const char *path) {
    int nc, grid, line;
    CALL(nc_open(path, NC_WRITE, &nc));
    CALL(nc_inq_varid(nc, "grid", &grid));
    CALL(nc_inq_varid(nc, "line", &line));

    size_t at00[2] = {0, 0};
    CALL(nc_put_var1_int(nc, grid, at00, &(int){1000}));

    size_t start[2] = {1, 1}, count[2] = {2, 3};
    int block[6] = {2001, 2002, 2003, 2004, 2005, 2006};
    CALL(nc_put_vara_int(nc, grid, start, count, block));

    size_t sstart[2] = {4, 0}, scount[2] = {1, 4};
    ptrdiff_t stride[2] = {1, 2};
    short strided[4] = {3001, 3002, 3003, 3004};
    CALL(nc_put_vars_short(nc, grid, sstart, scount, stride, strided));

    /* imap {1, 2}: element (i, j) of the 2x3 block is mapped[i + 2 * j] (a transposed buffer). */
    size_t mstart[2] = {3, 5}, mcount[2] = {2, 3};
    ptrdiff_t unit[2] = {1, 1}, imap[2] = {1, 2};
    int mapped[6] = {4001, 4002, 4003, 4004, 4005, 4006};
    CALL(nc_put_varm_int(nc, grid, mstart, mcount, unit, imap, mapped));

    float ramp[10];
    for (int k = 0; k < 10; k++) ramp[k] = 0.5f * (float)k;
    CALL(nc_put_var_float(nc, line, ramp));

    /* After a sync, netCDF-C 4.9.0 drops updates even to chunks it wrote itself. */
    CALL(nc_sync(nc));
    size_t lstart[2] = {5, 6}, lcount[2] = {1, 2};
    int late[2] = {5001, 5002};
    CALL(nc_put_vara(nc, grid, lstart, lcount, late));
    size_t at27[2] = {2, 7};
    CALL(nc_put_var1_longlong(nc, grid, at27, &(long long){6001}));

    /* A variable in a sub-group, written through the group's ncid. */
    int sub, deep;
    CALL(nc_inq_grp_ncid(nc, "sub", &sub));
    CALL(nc_inq_varid(sub, "deep", &deep));
    size_t at4[1] = {4};
    CALL(nc_put_var1_int(sub, deep, at4, &(int){777}));
    CALL(nc_close(nc));
    return 0;
}

static int touch(const char *path) {
    int nc;
    CALL(nc_open(path, NC_WRITE, &nc));
    CALL(nc_close(nc));
    return 0;
}

static int put_att(const char *path, const char *var, const char *name, const char *text) {
    int nc, v = NC_GLOBAL;
    CALL(nc_open(path, NC_WRITE, &nc));
    if (strcmp(var, "/") != 0) CALL(nc_inq_varid(nc, var, &v));
    CALL(nc_put_att_text(nc, v, name, strlen(text), text));
    CALL(nc_close(nc));
    return 0;
}

static int append_record(const char *path, const char *var, int value) {
    int nc, v, ndims, dimids[NC_MAX_VAR_DIMS];
    CALL(nc_open(path, NC_WRITE, &nc));
    CALL(nc_inq_varid(nc, var, &v));
    CALL(nc_inq_varndims(nc, v, &ndims));
    if (ndims < 1 || ndims > 4) return 2;
    CALL(nc_inq_vardimid(nc, v, dimids));
    size_t start[4] = {0}, count[4] = {1, 1, 1, 1}, n = 1;
    CALL(nc_inq_dimlen(nc, dimids[0], &start[0]));
    for (int d = 1; d < ndims; d++) {
        CALL(nc_inq_dimlen(nc, dimids[d], &count[d]));
        n *= count[d];
    }
    int *buf = malloc(n * sizeof *buf);
    if (!buf) return 2;
    for (size_t i = 0; i < n; i++) buf[i] = value;
    int rc = nc_put_vara_int(nc, v, start, count, buf);
    free(buf);
    CALL(rc);
    CALL(nc_close(nc));
    return 0;
}

static int append_records(const char *path, double value) {
    int nc, unlim, nvars;
    CALL(nc_open(path, NC_WRITE, &nc));
    CALL(nc_inq_unlimdim(nc, &unlim));
    if (unlim < 0) return 2;
    size_t records;
    CALL(nc_inq_dimlen(nc, unlim, &records));
    CALL(nc_inq_nvars(nc, &nvars));
    for (int v = 0; v < nvars; v++) {
        int ndims, dimids[NC_MAX_VAR_DIMS];
        CALL(nc_inq_varndims(nc, v, &ndims));
        if (ndims < 1 || ndims > 4) continue;
        CALL(nc_inq_vardimid(nc, v, dimids));
        if (dimids[0] != unlim) continue;
        size_t start[4] = {records, 0, 0, 0}, count[4] = {1, 1, 1, 1}, n = 1;
        for (int d = 1; d < ndims; d++) {
            CALL(nc_inq_dimlen(nc, dimids[d], &count[d]));
            n *= count[d];
        }
        double *buf = malloc(n * sizeof *buf);
        if (!buf) return 2;
        for (size_t k = 0; k < n; k++) buf[k] = value + 0.25 * (double)k;
        int rc = nc_put_vara_double(nc, v, start, count, buf);
        free(buf);
        CALL(rc);
    }
    CALL(nc_close(nc));
    return 0;
}

static int put_one(const char *path, const char *var) {
    int nc, v;
    CALL(nc_open(path, NC_WRITE, &nc));
    CALL(nc_inq_varid(nc, var, &v));
    size_t zero[NC_MAX_VAR_DIMS] = {0};
    int rc = nc_put_var1_int(nc, v, zero, &(int){12345});
    if (rc) fprintf(stderr, "nc_writer: nc_put_var1_int(%s): %s\n", var, nc_strerror(rc));
    CALL(nc_close(nc));
    return rc ? 3 : 0;
}

static int abort_create(const char *path, int sync) {
    int nc, dim, v;
    CALL(nc_create(path, NC_NETCDF4 | NC_CLOBBER, &nc));
    CALL(nc_def_dim(nc, "n", 4, &dim));
    CALL(nc_def_var(nc, "x", NC_INT, 1, &dim, &v));
    CALL(nc_enddef(nc));
    CALL(nc_put_var_int(nc, v, (int[]){7, 8, 9, 10}));
    if (sync) CALL(nc_sync(nc));
    CALL(nc_abort(nc));
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "update") == 0) return update(argv[2]);
    if (argc == 3 && strcmp(argv[1], "touch") == 0) return touch(argv[2]);
    if (argc == 6 && strcmp(argv[1], "put-att") == 0) return put_att(argv[2], argv[3], argv[4], argv[5]);
    if (argc == 5 && strcmp(argv[1], "append-record") == 0) return append_record(argv[2], argv[3], atoi(argv[4]));
    if (argc == 4 && strcmp(argv[1], "append-records") == 0) return append_records(argv[2], atof(argv[3]));
    if (argc == 4 && strcmp(argv[1], "put-one") == 0) return put_one(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "abort-create") == 0 &&
        (strcmp(argv[3], "sync") == 0 || strcmp(argv[3], "nosync") == 0))
        return abort_create(argv[2], strcmp(argv[3], "sync") == 0);
    fprintf(stderr, "usage: nc_writer update|touch DATASET | nc_writer put-one DATASET VAR | "
                    "nc_writer abort-create DATASET nosync|sync\n");
    return 2;
}
