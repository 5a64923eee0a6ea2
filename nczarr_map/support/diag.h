/*
 * diag.h - messages of the netCDF plugin on stderr.
 *
 * netCDF-C carries only an error code from a storage map to the user, so the plugin states the archive,
 * the entry and the problem on stderr when it returns an error that is not a routine "no such key" probe.
 * With MMZIP_NCZARR_TRACE=1 in the environment it also logs every storage-map call (for debugging and for
 * tests that check what reached the archive).
 */
#ifndef MZN_DIAG_H
#define MZN_DIAG_H

/* Prints "mmzip_nczarr: <message>\n" on stderr. Thread-safe (one write per message). */
void mzn_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* 1 if the environment variable name is set to a non-empty value other than "0". */
int mzn_env_flag(const char *name);

/* 1 if MMZIP_NCZARR_TRACE is set to a non-empty value other than "0" (read once). */
int mzn_trace_enabled(void);

/* Prints "mmzip_nczarr trace: <message>\n" on stderr if tracing is enabled. */
void mzn_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
