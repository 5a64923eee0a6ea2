/*
 * forward.h - finding the definitions we interpose on, to forward everything that is not ours.
 *
 * The plugin defines netCDF-C functions (nczmap_open, nc_open, nc_put_vara, ...) so that the dynamic
 * linker binds callers to it. Calls it does not serve go on to the next definition in lookup order:
 * dlsym(RTLD_NEXT) finds it when libnetcdf (or libc, for the stat and fopen of file_interpose.c) is in the
 * global scope. When libnetcdf sits in a dlopen()ed RTLD_LOCAL scope instead (an
 * LD_PRELOADed plugin in a Python process that imported netCDF4), RTLD_NEXT finds nothing, and the symbol
 * is looked up in the libnetcdf that is already loaded.
 */
#ifndef MZN_FORWARD_H
#define MZN_FORWARD_H

/*
 * Returns the next definition of the function `name` after this library, or NULL if there is none (for
 * example nczmap_truncate in netCDF-C 4.9.0). Thread-safe. Slow (a dlsym): callers cache the result with
 * MZN_NEXT.
 */
void *mzn_next_symbol(const char *name);

/* Caches mzn_next_symbol(name) in *slot (thread-safe, lock-free); returns it. */
void *mzn_next_symbol_cached(void **slot, const char *name);

/*
 * Returns a netCDF-C function the plugin does not define itself (nc_inq_var, nclistpush, ...): the first
 * definition in the global scope (dlsym(RTLD_DEFAULT), so that a program's own definition wins, as for a
 * linked call), else the one in the libnetcdf already loaded RTLD_LOCAL; NULL if neither exists.
 * Thread-safe. Slow (a dlsym): callers cache the result with mzn_netcdf_symbol_cached (nc_api.c).
 */
void *mzn_netcdf_symbol(const char *name);

/* Caches mzn_netcdf_symbol(name) in *slot as mzn_next_symbol_cached does; a NULL result is not cached. */
void *mzn_netcdf_symbol_cached(void **slot, const char *name);

/* Declares `fn` as a pointer of `type` (a function pointer type, e.g. int (*)(int)) to the next
 * definition of `name`. */
#define MZN_NEXT(type, fn, name)                                                                          \
    static void *fn##_slot;                                                                               \
    __typeof__(type) fn = (type)mzn_next_symbol_cached(&fn##_slot, name)

#endif
