/*
 * stats.h - how much of a netCDF program's time the storage map takes.
 *
 * With MMZIP_NCZARR_STATS=1 in the environment, every storage-map call the plugin serves is timed, and
 * when netCDF-C closes the map one line goes to stderr:
 *
 *   mmzip_nczarr stats: archive=PATH open_s=S read_calls=N read_bytes=B read_s=S read_faults=F
 *     write_calls=N write_bytes=B write_s=S write_faults=F probe_calls=N probe_s=S close_s=S store_s=S
 *
 * (on one line). probe counts exists, len and search; close_s includes the final publish (the commit);
 * store_s is the sum of all of them. *_faults are the page faults the calling thread took inside those
 * calls: reading, they are mostly first touches of the buffer netCDF-C just allocated for the object,
 * which any store has to fill. Comparing store_s with the program's run time separates the store's share
 * of the time from netCDF-C's own (tests/bench/nccopy_bench.py does this). Without the variable the cost is
 * one predictable branch per call.
 */
#ifndef MZN_STATS_H
#define MZN_STATS_H

#include <stdint.h>

typedef enum { MZN_OP_OPEN, MZN_OP_READ, MZN_OP_WRITE, MZN_OP_PROBE, MZN_OP_CLOSE, MZN_OP_COUNT } mzn_op;

typedef struct mzn_op_stats {
    uint64_t calls, bytes, faults;
    double seconds;
} mzn_op_stats;

typedef struct mzn_stats {
    mzn_op_stats op[MZN_OP_COUNT];
} mzn_stats;

/* A call being timed: taken by mzn_stats_start, given back to mzn_stats_stop. */
typedef struct mzn_stats_clock {
    int on;
    double t0;
    uint64_t faults0;
} mzn_stats_clock;

/* 1 if MMZIP_NCZARR_STATS is set to a non-empty value other than "0" (read once). */
int mzn_stats_enabled(void);

/* Starts timing one call (does nothing unless enabled). */
mzn_stats_clock mzn_stats_start(void);

/* Adds the call started at c, which moved bytes bytes, to op's totals in st (nothing unless enabled). */
void mzn_stats_stop(mzn_stats *st, mzn_op op, const mzn_stats_clock *c, uint64_t bytes);

/* Prints the stats line for archive_path (nothing unless enabled). */
void mzn_stats_print(const mzn_stats *st, const char *archive_path);

#endif
