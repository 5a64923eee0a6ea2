/*
 * errors.c - the driver's per-thread error message.
 *
 * The driver's internals report failures the way the mmzip core does (a status code plus a message), and
 * only the HDF5 callbacks turn the message into an HDF5 error-stack entry, so that the internals stay
 * usable outside HDF5 callbacks (the tool shims) and testable on their own.
 */
#include "h5mz_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_message[2048];

static void record(const char *fmt, va_list ap, const char *suffix) {
    int n = vsnprintf(last_message, sizeof last_message, fmt, ap);
    if (n < 0) n = 0;
    size_t used = (size_t)n < sizeof last_message ? (size_t)n : sizeof last_message - 1;
    if (suffix && *suffix) snprintf(last_message + used, sizeof last_message - used, ": %s", suffix);
}

int h5mz_fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(fmt, ap, NULL);
    va_end(ap);
    return code;
}

int h5mz_fail_core(int code, const char *fmt, ...) {
    /* Copy the core's message first: formatting ours must not clobber it. */
    char core[1024];
    snprintf(core, sizeof core, "%s", mmzip_last_error());
    va_list ap;
    va_start(ap, fmt);
    record(fmt, ap, core);
    va_end(ap);
    return code;
}

const char *h5mz_last_error(void) { return last_message; }

static _Thread_local char open_failure[sizeof last_message];

static _Thread_local int open_failure_status;

void h5mz_note_open_failure(int status) {
    memcpy(open_failure, last_message, sizeof open_failure);
    open_failure_status = status;
}

const char *h5mz_open_failure(void) { return open_failure; }

int h5mz_open_failure_status(void) { return open_failure[0] ? open_failure_status : MMZIP_OK; }

void h5mz_clear_open_failure(void) {
    open_failure[0] = '\0';
    open_failure_status = MMZIP_OK;
}
