/* forward.c - the next definition of an interposed symbol. */
#define _GNU_SOURCE
#include "forward.h"

#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <string.h>

/* dl_iterate_phdr callback: remembers the path of the first loaded libnetcdf. */
static int find_libnetcdf(struct dl_phdr_info *info, size_t size, void *ctx) {
    (void)size;
    const char *name = info->dlpi_name;
    if (!name || !*name) return 0;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libnetcdf.so", 12) != 0) return 0;
    *(const char **)ctx = name;
    return 1;
}

static void *from_loaded_libnetcdf(const char *symbol) {
    const char *path = NULL;
    dl_iterate_phdr(find_libnetcdf, &path);
    if (!path) return NULL;
    /* RTLD_NOLOAD: only a handle on the copy already mapped, never a second copy. */
    void *handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) return NULL;
    void *f = dlsym(handle, symbol);
    dlclose(handle); /* drops the reference taken above; the library stays loaded */
    return f;
}

void *mzn_next_symbol(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    return f ? f : from_loaded_libnetcdf(name);
}

void *mzn_next_symbol_cached(void **slot, const char *name) {
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!f) {
        f = mzn_next_symbol(name);
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    }
    return f;
}

void *mzn_netcdf_symbol(const char *name) {
    void *f = dlsym(RTLD_DEFAULT, name);
    return f ? f : from_loaded_libnetcdf(name);
}

void *mzn_netcdf_symbol_cached(void **slot, const char *name) {
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!f) {
        f = mzn_netcdf_symbol(name);
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    }
    return f;
}
