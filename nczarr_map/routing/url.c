/* url.c - building and parsing the file:// URLs of zip datasets. */
#include "url.h"

#include <netcdf.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "subdataset.h"

#define MAX_TOKENS 64

/* A growable string. */
typedef struct strbuf {
    char *p;
    size_t len, cap;
    int failed;
} strbuf;

static void sb_add(strbuf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        while (b->len + n + 1 > cap) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(strbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

static char *sb_finish(strbuf *b) {
    if (b->failed) {
        free(b->p);
        return NULL;
    }
    return b->p ? b->p : strdup("");
}

int mzn_url_is_file_url(const char *s) { return s && strncasecmp(s, "file://", 7) == 0; }

int mzn_url_has_scheme(const char *s) {
    if (!s) return 0;
    const char *sep = strstr(s, "://");
    const char *hash = strchr(s, '#');
    return sep && (!hash || sep < hash);
}

int mzn_url_names_zip(const char *s) {
    if (!s) return 0;
    size_t n = strcspn(s, "#");
    if (mzn_url_has_scheme(s)) n = strcspn(s, "#?");
    return n >= 4 && strncasecmp(s + n - 4, ".zip", 4) == 0;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes %XX escapes of s[0..n) (an invalid escape is kept as is). */
static char *percent_decode(const char *s, size_t n) {
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hex_digit(s[i + 1])) >= 0 &&
            (lo = hex_digit(s[i + 2])) >= 0) {
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return out;
}

static void percent_encode_into(strbuf *b, const char *s) {
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '%' || *p == '#' || *p == '?' || *p < 0x20 || *p >= 0x7F) {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            sb_add(b, e, 3);
        } else {
            sb_add(b, (const char *)p, 1);
        }
    }
}

/* Calls fn(param, length, ctx) for each '&'-separated parameter of the fragment. */
static void each_param(const char *fragment, void (*fn)(const char *, size_t, void *), void *ctx) {
    for (const char *p = fragment; p && *p;) {
        size_t n = strcspn(p, "&");
        if (n) fn(p, n, ctx);
        p += n;
        if (*p == '&') p++;
    }
}

static void find_raw_flag(const char *param, size_t n, void *ctx) {
    static const char want[] = "mmzip=raw";
    if (n == sizeof want - 1 && strncasecmp(param, want, n) == 0) *(int *)ctx = 1;
}

/* ctx: int[2], set to 1 when the mode list names plain Zarr ("zarr", "xarray"), and NCZarr ("nczarr"). */
static void find_zarr_modes(const char *param, size_t n, void *ctx) {
    int *seen = ctx;
    if (n < 5 || strncasecmp(param, "mode=", 5) != 0) return;
    for (size_t i = 5; i < n;) {
        size_t len = 0;
        while (i + len < n && param[i + len] != ',') len++;
        if ((len == 4 && strncasecmp(param + i, "zarr", 4) == 0) || (len == 6 && strncasecmp(param + i, "xarray", 6) == 0))
            seen[0] = 1;
        if (len == 6 && strncasecmp(param + i, "nczarr", 6) == 0) seen[1] = 1;
        i += len + 1;
    }
}

/* The "group=" parameter of a fragment, as found (still encoded). */
typedef struct group_param {
    const char *value;
    size_t len;
} group_param;

static void find_group(const char *param, size_t n, void *ctx) {
    group_param *g = ctx;
    if (n >= 6 && strncasecmp(param, "group=", 6) == 0) {
        g->value = param + 6;
        g->len = n - 6;
    }
}

int mzn_url_parse(const char *url, mzn_url *out) {
    memset(out, 0, sizeof *out);
    if (!mzn_url_is_file_url(url)) return NC_EURL;
    const char *p = url + 7;
    if (strncasecmp(p, "localhost/", 10) == 0) p += 9;
    size_t n = strcspn(p, "#?");
    if (n == 0) return NC_EURL;
    char *decoded = percent_decode(p, n);
    if (!decoded) return NC_ENOMEM;
    if (decoded[0] != '/') {
        /* netCDF-C absolutizes relative URLs before they reach a map; accept them anyway. */
        char *abs = mzn_url_for_path(decoded, NULL);
        free(decoded);
        if (!abs) return NC_ENOMEM;
        decoded = percent_decode(abs + 7, strlen(abs + 7));
        free(abs);
        if (!decoded) return NC_ENOMEM;
    }
    out->path = decoded;
    const char *hash = strchr(url, '#');
    if (!hash) return NC_NOERR;
    each_param(hash + 1, find_raw_flag, &out->view_raw);
    int modes[2] = {0, 0};
    each_param(hash + 1, find_zarr_modes, modes);
    /* netCDF-C 4.9.0 hands the map "mode=nczarr,zarr,zip,..." for "#mode=zarr,zip": "zarr" (or "xarray") is
     * what selects plain Zarr (its FLAG_PUREZARR), whatever else the list holds. */
    out->pure_zarr = modes[0];
    group_param g = {NULL, 0};
    each_param(hash + 1, find_group, &g);
    if (!g.value) return NC_NOERR;
    char *raw = percent_decode(g.value, g.len);
    out->group = raw ? mzn_subdataset_normalize(raw) : NULL;
    int bad = raw && (!out->group || !out->group[0]);
    free(raw);
    if (out->group && out->group[0]) return NC_NOERR;
    mzn_url_clear(out);
    return bad ? NC_EURL : NC_ENOMEM;
}

void mzn_url_clear(mzn_url *u) {
    free(u->path);
    free(u->group);
    u->path = u->group = NULL;
}

char *mzn_url_for_subdataset(const char *path, const char *group) {
    static const char hex[] = "0123456789ABCDEF";
    char *base = mzn_url_for_path(path, "mode=nczarr,zip&group=/");
    if (!base) return NULL;
    strbuf b = {0};
    sb_str(&b, base);
    free(base);
    for (const unsigned char *p = (const unsigned char *)group; *p; p++) {
        if (*p == '%' || *p == '&' || *p == '#' || *p == '?' || *p < 0x20 || *p >= 0x7F) {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            sb_add(&b, e, 3);
        } else {
            sb_add(&b, (const char *)p, 1);
        }
    }
    return sb_finish(&b);
}

char *mzn_url_for_path(const char *path, const char *fragment) {
    strbuf b = {0};
    sb_str(&b, "file://");
    if (path[0] != '/') {
        char cwd[4096];
        if (!getcwd(cwd, sizeof cwd)) return NULL;
        percent_encode_into(&b, cwd);
        if (b.len && b.p[b.len - 1] != '/') sb_str(&b, "/");
        while (path[0] == '.' && path[1] == '/') {
            path += 2;
            while (*path == '/') path++;
        }
    }
    percent_encode_into(&b, path);
    if (fragment) {
        sb_str(&b, "#");
        sb_str(&b, fragment);
    }
    return sb_finish(&b);
}

/* The mode tokens of a URL's fragment. */
typedef struct mode_list {
    const char *tok[MAX_TOKENS];
    size_t len[MAX_TOKENS];
    int n;
    const char *param;  /* the "mode=" parameter within the fragment */
    size_t param_len;
} mode_list;

static void find_mode_param(const char *param, size_t n, void *ctx) {
    mode_list *m = ctx;
    if (n >= 5 && strncasecmp(param, "mode=", 5) == 0) {
        m->param = param;
        m->param_len = n;
    }
}

/* Fills *m from the URL; returns 0 if the URL has a mode parameter. */
static int read_modes(const char *url, mode_list *m) {
    memset(m, 0, sizeof *m);
    const char *hash = strchr(url, '#');
    if (!hash) return -1;
    each_param(hash + 1, find_mode_param, m);
    if (!m->param) return -1;
    const char *p = m->param + 5, *end = m->param + m->param_len;
    while (p < end && m->n < MAX_TOKENS) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        size_t n = c ? (size_t)(c - p) : (size_t)(end - p);
        if (n) {
            m->tok[m->n] = p;
            m->len[m->n++] = n;
        }
        p += n + 1;
    }
    return 0;
}

static int token_is(const mode_list *m, int i, const char *word) {
    return m->len[i] == strlen(word) && strncasecmp(m->tok[i], word, m->len[i]) == 0;
}

static int has_token(const mode_list *m, const char *word) {
    for (int i = 0; i < m->n; i++)
        if (token_is(m, i, word)) return 1;
    return 0;
}

int mzn_url_selects_zip(const char *url) {
    mode_list m;
    return url && read_modes(url, &m) == 0 && has_token(&m, "zip");
}

char *mzn_url_fix_zip_mode(const char *url) {
    mode_list m;
    if (!url || read_modes(url, &m) != 0) return NULL;
    int has_zip = has_token(&m, "zip");
    int has_format = has_token(&m, "nczarr") || has_token(&m, "zarr") || has_token(&m, "xarray") ||
                     has_token(&m, "noxarray");
    int has_storage = has_zip || has_token(&m, "file") || has_token(&m, "s3");
    if (!has_zip && !(mzn_url_names_zip(url) && has_format && !has_storage)) return NULL;

    strbuf mode = {0};
    sb_str(&mode, "mode=");
    int first = 1;
    if (!has_format) {
        sb_str(&mode, "nczarr");
        first = 0;
    }
    for (int i = 0; i < m.n; i++) {
        if (token_is(&m, i, "zip")) continue;
        if (!first) sb_str(&mode, ",");
        sb_add(&mode, m.tok[i], m.len[i]);
        first = 0;
    }
    sb_str(&mode, first ? "zip" : ",zip");
    char *new_mode = sb_finish(&mode);
    if (!new_mode) return NULL;
    if (strlen(new_mode) == m.param_len && strncmp(new_mode, m.param, m.param_len) == 0) {
        free(new_mode);
        return NULL;
    }
    strbuf b = {0};
    sb_add(&b, url, (size_t)(m.param - url));
    sb_str(&b, new_mode);
    sb_str(&b, m.param + m.param_len);
    free(new_mode);
    return sb_finish(&b);
}
