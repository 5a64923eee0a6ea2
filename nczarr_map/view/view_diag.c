/* view_diag.c - error messages of the compatibility view. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "view_internal.h"

int mzv_fail(mzv_view *v, int code, const char *entry, const char *fmt, ...) {
    char problem[768], message[sizeof v->last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    snprintf(message, sizeof message, "%s: %s%s%s", v->archive ? mmzip_path(v->archive) : "(no archive)",
             entry ? entry : "", entry ? ": " : "", problem);
    /* NCZarr asks for a failing chunk once for its length and again to read it; say it once. */
    if (strcmp(message, v->last_error) != 0) fprintf(stderr, "mmzip view: %s\n", message);
    memcpy(v->last_error, message, sizeof message);
    return code;
}

const char *mzv_last_error(const mzv_view *v) { return v ? v->last_error : ""; }
