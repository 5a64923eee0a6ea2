/*
 * number_interpose.c - NCZ_stringconvert, the NCZarr function that renders attribute values and fill values
 * as JSON text, so that floating-point values keep the digits that read back as the same number.
 *
 * Every netCDF-C release from 4.9.0 to 4.10.1 (libnczarr/zcvt.c, NCZ_stringconvert1) prints floats and
 * doubles with "%lg": six significant digits. A double attribute of 0.0123456789 is stored as 0.0123457, a
 * float one of 0.1234567 as 0.123457, and the default fill value of a double variable, 9.969209968386869e36,
 * as 9.96921e+36: a missing chunk of such a variable then reads as 9.96921e+36, which is not the fill value,
 * so netCDF4-python and ncdump show it as data (an outside review: exit status 0, values nobody wrote).
 *
 * The real function runs first; where its text does not read back as the value it rendered, the text is
 * replaced by the shortest "%.<n>g" that does (n up to 9 for a float, 17 for a double), so that values
 * "%lg" renders exactly keep netCDF-C's own text. netCDF-C reads the values back with sscanf("%lg"),
 * which takes any number of digits.
 *
 * This applies to every NCZarr dataset the process writes, the plugin's and netCDF-C's own stores alike:
 * the function only formats numbers, and has no dataset to tell them apart by. On a release without a row
 * in the release table the real function's text is kept.
 *
 * The JSON node is netCDF-C's NCjson: an int sort, then the malloc'ed string of a number (offset 8 on
 * every release served), then the list of an array, whose element pointers start at offset 24 (4.9.x:
 * an int or size_t length before them) or 32 (4.10: an allocation count and a length before them).
 * NCZ_stringconvert makes one node for one value and an array of exactly len nodes for more.
 */
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_version.h"
#include "forward.h"
#include "netcdf_releases.h"

#define EXPORT __attribute__((visibility("default")))

/* The number text of an NCjson node (struct NCjson { int sort; char *string; ... } on every release served). */
static char **number_text(void *node) { return (char **)((char *)node + 8); }

/* The element nodes of an NCjson array. */
static void **array_nodes(void *node, mzn_abi abi) {
    return *(void ***)((char *)node + (abi == MZN_ABI_V410 ? 32 : 24));
}

/* Replaces the node's text by the shortest rendering of value that reads back as it, if the text does not. */
static int keep_digits(void *node, double value, int is_float) {
    char **text = number_text(node);
    if (!*text || !isfinite(value)) return NC_NOERR;
    double back = strtod(*text, NULL);
    if (is_float ? (float)back == (float)value : back == value) return NC_NOERR;
    char buf[40];
    for (int digits = 7; digits <= (is_float ? 9 : 17); digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, value);
        back = strtod(buf, NULL);
        if (is_float ? (float)back == (float)value : back == value) break;
    }
    char *copy = strdup(buf);
    if (!copy) return NC_ENOMEM;
    free(*text);
    *text = copy;
    return NC_NOERR;
}

EXPORT int NCZ_stringconvert(nc_type type, size_t len, void *data, void **json) {
    MZN_NEXT(int (*)(nc_type, size_t, void *, void **), next, "NCZ_stringconvert");
    if (!next) return NC_EINTERNAL;
    int rc = next(type, len, data, json);
    const mzn_release *release = mzn_release_current();
    if (rc != NC_NOERR || !json || !*json || !data || len == 0 || !release ||
        (type != NC_FLOAT && type != NC_DOUBLE))
        return rc;
    int is_float = type == NC_FLOAT;
    void **nodes = len == 1 ? json : array_nodes(*json, release->abi);
    for (size_t i = 0; rc == NC_NOERR && i < len; i++) {
        double value = is_float ? (double)((const float *)data)[i] : ((const double *)data)[i];
        rc = keep_digits(nodes[i], value, is_float);
    }
    return rc;
}
