/* nolocks_preload.c - LD_PRELOAD shim for core_shared_nolocks: a file system that refuses record locks, as
 * Lustre mounted without -o flock does (fcntl locks fail with ENOSYS) and NFS without a lock manager
 * (ENOLCK). Every F_OFD_SETLK/SETLKW/GETLK and classic record-lock call fails with the errno named by
 * $NOLOCKS_ERRNO (ENOSYS by default); every other fcntl goes to the C library. Used by the CLI test only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#ifndef F_OFD_GETLK
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#define F_OFD_SETLKW 38
#endif

int fcntl(int fd, int cmd, ...) {
    static int (*real)(int, int, ...);
    if (!real) real = (int (*)(int, int, ...))dlsym(RTLD_NEXT, "fcntl");
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW || cmd == F_OFD_GETLK || cmd == F_SETLK || cmd == F_SETLKW ||
        cmd == F_GETLK) {
        const char *e = getenv("NOLOCKS_ERRNO");
        errno = e && strcmp(e, "ENOLCK") == 0 ? ENOLCK : ENOSYS;
        return -1;
    }
    return real(fd, cmd, arg);
}
