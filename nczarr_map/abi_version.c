/* abi_version.c - detection of the storage-map ABI from the netCDF-C version string. */
#include "abi_version.h"

#include <netcdf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "nc_api.h"

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static mzn_abi detected_abi = MZN_ABI_UNKNOWN;
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

mzn_abi mzn_abi_from_string(const char *version, int *major, int *minor, int *patch) {
    if (!version) return MZN_ABI_UNKNOWN;
    const char *p = version;
    while (*p == ' ') p++;
    int ma = read_number(&p);
    if (ma < 0 || *p++ != '.') return MZN_ABI_UNKNOWN;
    int mi = read_number(&p);
    if (mi < 0 || *p++ != '.') return MZN_ABI_UNKNOWN;
    int pa = read_number(&p);
    if (pa < 0) return MZN_ABI_UNKNOWN;
    if (major) *major = ma;
    if (minor) *minor = mi;
    if (patch) *patch = pa;
    if (ma != 4) return MZN_ABI_UNKNOWN;
    if (mi == 9 && pa <= 2) return MZN_ABI_V490;
    if (mi == 9 && pa == 3) return MZN_ABI_V493;
    if (mi == 10) return MZN_ABI_V410;
    return MZN_ABI_UNKNOWN;
}

static void detect(void) {
    const char *v = mzn_nc_inq_libvers();
    snprintf(detected_version, sizeof detected_version, "%s", v ? v : "(null)");
    /* mzn_nc_inq_libvers() returns "4.9.0 of <date> $": keep the version and drop the build date. */
    char *of = strstr(detected_version, " of ");
    if (of) *of = '\0';
    detected_abi = mzn_abi_from_string(detected_version, NULL, NULL, NULL);
    mzn_trace("bound to the process's netCDF-C %s: %s storage-map ABI", detected_version, mzn_abi_name(detected_abi));
}

mzn_abi mzn_abi_current(void) {
    pthread_once(&detect_once, detect);
    return detected_abi;
}

const char *mzn_abi_version_string(void) { return detected_version; }

const char *mzn_abi_name(mzn_abi abi) {
    switch (abi) {
    case MZN_ABI_V490: return "netCDF-C 4.9.0-4.9.2";
    case MZN_ABI_V493: return "netCDF-C 4.9.3";
    case MZN_ABI_V410: return "netCDF-C 4.10.x";
    default: return "an unsupported netCDF-C";
    }
}

int mzn_abi_loses_chunk_updates(mzn_abi abi) { return abi == MZN_ABI_V490; }

static pthread_once_t refuse_once = PTHREAD_ONCE_INIT;

static void print_refusal(void) {
    mzn_diag("netCDF-C %s is not supported: its storage-map ABI is unknown to this build of "
             "libmmzip_nczarr (supported: 4.9.0-4.9.2, 4.9.3, 4.10.x); .zip archives cannot be opened",
             detected_version);
}

int mzn_abi_refuse(void) {
    mzn_abi_current();
    pthread_once(&refuse_once, print_refusal);
    return NC_ENOTBUILT;
}
