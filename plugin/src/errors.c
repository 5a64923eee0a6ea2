/* errors.c - status codes and the per-thread error message. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>

/* Per thread, so that concurrent readers each keep the message of their own failure. */
static __thread char last_error[1024];
/* The errno of the system call behind the last failure, for callers that map failures to their own
 * errno-based errors (the Python package's FileNotFoundError, PermissionError, ...). */
static __thread int last_errno;

const char *mmzip_last_error(void) { return last_error; }

int mmzip_last_errno(void) { return last_errno; }

void mz_clear_error(void) {
    last_error[0] = '\0';
    last_errno = 0;
}

int mz_fail(int status, const char *fmt, ...) {
    /* No system call failed, except for the archive found missing, which every caller reports as ENOENT. */
    last_errno = status == MMZIP_ENOENT ? ENOENT : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

int mz_fail_errno(int status, int err, const char *fmt, ...) {
    last_errno = err;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof last_error)
        snprintf(last_error + n, sizeof last_error - (size_t)n, ": %s", strerror(err));
    if (err == ENOMEM && status == MMZIP_EIO) return MMZIP_ENOMEM;
    if (err == ENOSPC || err == EFBIG) return status == MMZIP_EIO ? MMZIP_EIO : status;
    return status;
}

const char *mmzip_strerror(int status) {
    switch (status) {
    case MMZIP_OK: return "MMZIP_OK: success";
    case MMZIP_ENOTFOUND: return "MMZIP_ENOTFOUND: no such entry";
    case MMZIP_EIO: return "MMZIP_EIO: input/output error";
    case MMZIP_ENOMEM: return "MMZIP_ENOMEM: out of memory or address space";
    case MMZIP_EINVAL: return "MMZIP_EINVAL: invalid argument";
    case MMZIP_ENOTZIP: return "MMZIP_ENOTZIP: not a ZIP archive";
    case MMZIP_ECORRUPT: return "MMZIP_ECORRUPT: corrupt or hostile archive";
    case MMZIP_EUNSUPPORTED: return "MMZIP_EUNSUPPORTED: unsupported feature";
    case MMZIP_ECRC: return "MMZIP_ECRC: CRC-32 mismatch";
    case MMZIP_EBUSY: return "MMZIP_EBUSY: archive busy";
    case MMZIP_EREADONLY: return "MMZIP_EREADONLY: archive opened read-only";
    case MMZIP_ETOOBIG: return "MMZIP_ETOOBIG: size limit exceeded";
    case MMZIP_ENOENT: return "MMZIP_ENOENT: archive file does not exist";
    case MMZIP_ESTALE: return "MMZIP_ESTALE: archive replaced on disk";
    case MMZIP_EEXIST: return "MMZIP_EEXIST: archive created by another process meanwhile";
    default: return "unknown mmzip status";
    }
}

const char *mmzip_version(void) { return MMZIP_VERSION_STRING; }
