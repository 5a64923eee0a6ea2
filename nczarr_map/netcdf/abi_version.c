/* abi_version.c - detection of the running netCDF-C release from its version string. */
#include "abi_version.h"

#include <netcdf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "nc_api.h"

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static const mzn_release *detected;
static char detected_version[128];

/* Reads a decimal number at *p; returns -1 if there is none. */
static int read_number(const char **p) {
    const char *s = *p;
    if (*s < '0' || *s > '9') return -1;
    long v = 0;
    while (*s >= '0' && *s <= '9' && v < 100000) v = v * 10 + (*s++ - '0');
    *p = s;
    return (int)v;
}

const mzn_release *mzn_release_from_string(const char *version, int *major, int *minor, int *patch) {
    if (!version) return NULL;
    const char *p = version;
    while (*p == ' ') p++;
    int ma = read_number(&p);
    if (ma < 0 || *p++ != '.') return NULL;
    int mi = read_number(&p);
    if (mi < 0 || *p++ != '.') return NULL;
    int pa = read_number(&p);
    if (pa < 0) return NULL;
    if (major) *major = ma;
    if (minor) *minor = mi;
    if (patch) *patch = pa;
    return mzn_release_find(ma, mi, pa);
}

static void detect(void) {
    const char *v = mzn_nc_inq_libvers();
    snprintf(detected_version, sizeof detected_version, "%s", v ? v : "(null)");
    /* mzn_nc_inq_libvers() returns "4.9.0 of <date> $": keep the version and drop the build date. */
    char *of = strstr(detected_version, " of ");
    if (of) *of = '\0';
    detected = mzn_release_from_string(detected_version, NULL, NULL, NULL);
    mzn_trace("bound to the process's netCDF-C %s (served as %s)", detected_version,
              detected ? detected->versions : "none: a release this build does not know");
}

const mzn_release *mzn_release_current(void) {
    pthread_once(&detect_once, detect);
    return detected;
}

const char *mzn_abi_version_string(void) { return detected_version; }

static pthread_once_t refuse_once = PTHREAD_ONCE_INIT;

static void print_refusal(void) {
    mzn_diag("netCDF-C %s is not supported: its storage-map ABI is unknown to this build of "
             "libmmzip_nczarr (supported: %s); .zip archives cannot be opened",
             detected_version, mzn_releases_served());
}

int mzn_abi_refuse(void) {
    mzn_release_current();
    pthread_once(&refuse_once, print_refusal);
    return NC_ENOTBUILT;
}
