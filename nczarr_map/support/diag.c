/* diag.c - stderr messages and the optional call trace. */
#include "diag.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void emit(const char *tag, const char *fmt, va_list ap) {
    char line[4096];
    int n = snprintf(line, sizeof line, "%s: ", tag);
    if (n < 0) return;
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    if (m < 0) return;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2) len = sizeof line - 2;
    line[len++] = '\n';
    /* One write(2), so that messages of concurrent threads or processes do not interleave. */
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
}

void mzn_diag(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit("mmzip_nczarr", fmt, ap);
    va_end(ap);
}

static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static int trace_on;

int mzn_env_flag(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

static void read_trace_env(void) { trace_on = mzn_env_flag("MMZIP_NCZARR_TRACE"); }

int mzn_trace_enabled(void) {
    pthread_once(&trace_once, read_trace_env);
    return trace_on;
}

void mzn_trace(const char *fmt, ...) {
    if (!mzn_trace_enabled()) return;
    va_list ap;
    va_start(ap, fmt);
    emit("mmzip_nczarr trace", fmt, ap);
    va_end(ap);
}
