/* view_release.c - the running netCDF-C release's conventions, from its row of the release table
 * (see view_release.h). */
#include "view_release.h"

#include <string.h>

/* The running release's row of the release table; NULL until the map names one: the oldest. */
static const mzn_release *release;

static const mzn_release *running(void) {
    const mzn_release *r = __atomic_load_n(&release, __ATOMIC_ACQUIRE);
    return r ? r : mzn_release_oldest();
}

void mzv_set_netcdf_release(const mzn_release *r) { __atomic_store_n(&release, r, __ATOMIC_RELEASE); }

const char *mzv_types_key(void) { return running()->types_key; }

int mzv_fixed_strings(void) { return running()->fixed_strings; }

int mzv_infers_int_attributes(void) { return running()->infers_int_attributes; }

int mzv_reads_long_chunks(void) { return running()->reads_long_chunks; }

int mzv_reads_lowercase_nczarr(void) { return running()->reads_lowercase_nczarr; }

const char *mzv_release_attr_type(const char *type) {
    /* The two spellings of char: each release refuses the other's. */
    if (strcmp(type, ">S1") == 0 || strcmp(type, "<U1") == 0) return running()->char_attr_type;
    return type;
}

int mzv_release_reads_attr_type(const char *type) {
    if (running()->reads_string_attr_types) return 1;
    if (strcmp(type, "|J0") == 0) return 0;
    return !(type[0] == '|' && type[1] == 'S' && strcmp(type + 2, "1") != 0);
}

/* Reads a decimal number of at most four digits at *p; -1 if there is none. */
static int read_number(const char **p) {
    const char *s = *p;
    int v = 0, digits = 0;
    while (*s >= '0' && *s <= '9' && digits < 4) v = v * 10 + (*s++ - '0'), digits++;
    if (!digits || (*s >= '0' && *s <= '9')) return -1;
    *p = s;
    return v;
}

int mzv_written_with_mislabelled_byte_order(const char *props) {
    for (const char *p = props; p && (p = strstr(p, "netcdf=")) != NULL;) {
        p += strlen("netcdf=");
        const char *q = p;
        int major = read_number(&q), minor = major < 0 || *q++ != '.' ? -1 : read_number(&q);
        int patch = minor < 0 || *q++ != '.' ? -1 : read_number(&q);
        const mzn_release *r = patch < 0 ? NULL : mzn_release_find(major, minor, patch);
        if (r && r->mislabels_byte_order) return 1;
    }
    return 0;
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
