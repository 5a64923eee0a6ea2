/* view_release.c - the running netCDF-C release's conventions (see view_release.h). */
#include "view_release.h"

#include <string.h>

/* major * 10000 + minor * 100 + patch; 4.9.0 until the map says otherwise. */
static int release = 40900;

void mzv_set_netcdf_release(int major, int minor, int patch) {
    __atomic_store_n(&release, major * 10000 + minor * 100 + patch, __ATOMIC_RELAXED);
}

const char *mzv_types_key(void) {
    return __atomic_load_n(&release, __ATOMIC_RELAXED) >= 40903 ? "_nczarr_attr" : "_NCZARR_ATTR";
}

int mzv_fixed_strings(void) { return __atomic_load_n(&release, __ATOMIC_RELAXED) >= 40903; }

int mzv_infers_int_attributes(void) { return __atomic_load_n(&release, __ATOMIC_RELAXED) >= 40903; }

int mzv_reads_long_chunks(void) { return __atomic_load_n(&release, __ATOMIC_RELAXED) >= 40903; }

int mzv_reads_lowercase_nczarr(void) { return __atomic_load_n(&release, __ATOMIC_RELAXED) >= 40903; }

const char *mzv_release_attr_type(const char *type) {
    int r = __atomic_load_n(&release, __ATOMIC_RELAXED);
    if (r < 40903 && strcmp(type, ">S1") == 0) return "<U1";
    if (r >= 40903 && strcmp(type, "<U1") == 0) return ">S1";
    return type;
}

int mzv_release_reads_attr_type(const char *type) {
    if (__atomic_load_n(&release, __ATOMIC_RELAXED) >= 40903) return 1;
    if (strcmp(type, "|J0") == 0) return 0;
    return !(type[0] == '|' && type[1] == 'S' && strcmp(type + 2, "1") != 0);
}

int mzv_is_types_key(const char *key) {
    return strcmp(key, "_NCZARR_ATTR") == 0 || strcmp(key, "_nczarr_attr") == 0;
}

const mzj_value *mzv_archive_types_table(const mzj_value *attrs) {
    const char *mine = mzv_types_key();
    const char *other = strcmp(mine, "_nczarr_attr") == 0 ? "_NCZARR_ATTR" : "_nczarr_attr";
    const mzj_value *t = mzj_get(mzj_get(attrs, mine), "types");
    return t ? t : mzj_get(mzj_get(attrs, other), "types");
}
