/* session.c - opening and closing a dataset session, and the read side of the storage map. */
#include "session.h"

#include <errno.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diag.h"
#include "layout.h"
#include "publish.h"
#include "registry.h"
#include "root_slot.h"
#include "status.h"
#include "subdataset.h"
#include "url.h"
#include "nc_api.h"
#include "view_release.h"

/* The user switched the compatibility view off for all datasets of the process. */
static int view_disabled_by_env(void) {
    const char *v = getenv("MMZIP_NCZARR_VIEW");
    return v && strcmp(v, "raw") == 0;
}

static void free_session(mzn_session *s) {
    if (!s) return;
    mzn_keymap_clear(&s->pending_metadata, free);
    mzn_keymap_clear(&s->pending_chunks, NULL);
    mzn_keymap_clear(&s->attrs_read, NULL);
    mzn_keymap_clear(&s->created_metadata, NULL);
    mzn_keymap_clear(&s->dropped_fill_chunks, free);
    mzn_keymap_clear(&s->put_regions, free);
    free(s->base.url);
    free(s->archive_path);
    free(s->prefix);
    free(s->group);
    free(s);
}

static int open_archive(mzn_session *s, int mode, int create) {
    mmzip_options opts;
    mmzip_options_init(&opts);
    opts.commit_policy = MMZIP_COMMIT_MANUAL;
    /* Chunks the compatibility view decodes (Blosc, zstd, big-endian, Fortran order, ...) and metadata are
     * taken in place (mmzip_get): their stored bytes are checked against the CRC-32 once, before the first
     * use, as mmzip_read checks the chunks netCDF-C reads itself. Without it a flipped byte of such a chunk
     * came out as a value. */
    opts.flags |= MMZIP_VERIFY_CRC;
    const char *how;
    if (create && s->group && access(s->archive_path, F_OK) == 0) {
        /* A new sub-dataset in an existing archive: appended to it, every other entry left as it is. */
        how = "r+";
    } else if (create) {
        if ((mode & NC_NOCLOBBER) && access(s->archive_path, F_OK) == 0) {
            mzn_diag("%s: cannot create the dataset: the file exists and NC_NOCLOBBER was given",
                     s->archive_path);
            return NC_EEXIST;
        }
        /* Nothing appears on disk before the first commit: an nccopy killed midway leaves no archive, or
         * leaves the previous one untouched. */
        opts.flags |= MMZIP_PUBLISH_ON_COMMIT;
        how = "w";
    } else {
        how = (mode & NC_WRITE) ? "r+" : "r";
    }
    int st = mmzip_open(s->archive_path, how, &opts, &s->archive);
    if (st != MMZIP_OK) {
        mzn_diag("%s", mmzip_last_error());
        return mzn_nc_error(st);
    }
    s->writable = create || (mode & NC_WRITE);
    s->created = create;
    return NC_NOERR;
}

/* netCDF-C writes Zarr v2 metadata: a write session on a Zarr v3 dataset would leave a mixed archive that
 * neither Zarr v3 readers nor netCDF read correctly. Refused at open, before anything is written. */
static int refuse_zarr_v3_writes(mzn_session *s) {
    char *root = mzn_session_entry_name(s, "/zarr.json");
    if (!root) return NC_ENOMEM;
    int v3 = mmzip_exists(s->archive, root);
    free(root);
    if (!v3) return NC_NOERR;
    mzn_diag("%s: the archive is Zarr v3 (zarr.json), which netCDF reads through the compatibility view but "
             "cannot write: open it read-only (without NC_WRITE)", s->archive_path);
    return NC_EPERM;
}

/* An archive of several datasets without a group at its root (sub-datasets created before the root group
 * was written with the first one, `zip -r` of a folder of stores): read as a whole it would show its first
 * dataset only, as if it were all the archive holds. */
static int refuse_archive_of_datasets(mzn_session *s) {
    char *names = NULL;
    int n = mzn_layout_top_datasets(s->archive, &names);
    if (n < 0) return NC_ENOMEM;
    if (n > 1)
        mzn_diag("%s: the archive holds %d Zarr datasets (%s) and no Zarr group at its root, so it cannot be read "
                 "as one dataset: open each as '%s#/<name>' (e.g. '%s#/%.*s')", s->archive_path, n, names,
                 s->archive_path, s->archive_path, (int)strlen(s->prefix) - 1,
                 s->prefix);
    free(names);
    return n > 1 ? NC_ENOTNC : NC_NOERR;
}

/*
 * The dataset prefix of a sub-dataset ("group=" in the URL): the group's entries. Opening needs a Zarr group
 * there; creating needs nothing there (the ZIP is append-only: a sub-dataset cannot be truncated).
 */
static int root_at_group(mzn_session *s, int create) {
    mzn_target t;
    if (mzn_subdataset_find(s->archive, s->group, &t) != MMZIP_OK) return NC_ENOMEM;
    int rc = NC_NOERR;
    if (create && t.kind == MZN_TARGET_NONE && mmzip_exists(s->archive, "zarr.json")) {
        /* netCDF-C writes Zarr v2: a v2 group inside a v3 hierarchy, which Zarr v3 readers do not see. */
        mzn_diag("%s#/%s: cannot create a sub-dataset there: the archive is Zarr v3 (zarr.json), which netCDF "
                 "reads but cannot write", s->archive_path, s->group);
        rc = NC_EPERM;
    } else if (create && t.kind != MZN_TARGET_NONE) {
        mzn_diag("%s#/%s: cannot create a sub-dataset there: the archive already holds %s; truncating a "
                 "sub-dataset inside an archive is not supported (the archive is append-only): open it for "
                 "writing (NC_WRITE, netCDF4 mode \"a\" or \"r+\") to add to it, or name a new group",
                 s->archive_path, s->group, t.description);
        rc = NC_EEXIST;
    } else if (!create && t.kind != MZN_TARGET_ZARR_GROUP) {
        mzn_subdataset_report(s->archive_path, s->group, &t);
        rc = t.kind == MZN_TARGET_NONE ? ENOENT : NC_ENOTNC;
    } else {
        s->prefix = t.prefix;
        t.prefix = NULL;
    }
    mzn_target_clear(&t);
    return rc;
}

int mzn_session_open(const char *url, int mode, mzn_size64 flags, const mzn_release *release, int create,
                     mzn_session **out) {
    *out = NULL;
    mzn_url parsed;
    int rc = mzn_url_parse(url, &parsed);
    if (rc != NC_NOERR) {
        mzn_diag("cannot open '%s': a zip dataset must be named by a file:// URL or a local path", url);
        return rc;
    }
    mzn_session *s = calloc(1, sizeof *s);
    if (!s) {
        mzn_url_clear(&parsed);
        return NC_ENOMEM;
    }
    s->base.format = MZN_IMPL_ZIP;
    s->base.mode = mode;
    s->base.flags = flags;
    s->release = release;
    s->archive_path = parsed.path;
    s->base.url = strdup(url);
    if (!s->base.url) {
        rc = NC_ENOMEM;
        goto fail;
    }
    s->group = parsed.group;
    parsed.group = NULL;
    if ((rc = open_archive(s, mode, create)) != NC_NOERR) goto fail;

    if (s->group) {
        if ((rc = root_at_group(s, create)) != NC_NOERR) goto fail;
    } else {
        mzn_layout layout;
        int st = mzn_layout_detect(s->archive, &layout);
        if (st != MMZIP_OK) {
            mzn_diag("%s: cannot list the archive: %s", s->archive_path, mmzip_last_error());
            rc = mzn_nc_error(st);
            goto fail;
        }
        if (!create && !layout.has_zarr && mmzip_count(s->archive) > 0)
            mzn_diag("%s: the archive holds no Zarr dataset (no .zgroup, .zarray or .zattrs at its root or under "
                     "one top directory)", s->archive_path);
        s->prefix = layout.prefix;
        if (!create && layout.has_zarr && s->prefix[0] && (rc = refuse_archive_of_datasets(s)) != NC_NOERR)
            goto fail;
    }
    s->prefix_len = strlen(s->prefix);
    if (!create && s->writable && (rc = refuse_zarr_v3_writes(s)) != NC_NOERR) goto fail;

    int view_enabled = !parsed.view_raw && !view_disabled_by_env();
    mzv_set_netcdf_release(s->release); /* the view presents the running release's conventions */
    rc = mzv_open_mode(s->archive, s->prefix, view_enabled, parsed.pure_zarr, &s->view);
    if (rc != NC_NOERR) {
        /* The view has said why, naming the object (a refusal of what netCDF-C would misread or leave out:
         * switching the view off would not help). Only running out of memory is silent there. */
        if (rc == NC_ENOMEM) mzn_diag("%s: out of memory reading the archive's metadata", s->archive_path);
        goto fail;
    }
    if (s->writable && mzv_nested_nczarr(s->view)) {
        /* netCDF-C would write the re-rooted dimension references into the archive, where they would name
         * other dimensions for every reader of the whole dataset. */
        mzn_diag("%s#/%s: this group belongs to the NCZarr dataset at the archive's root and is presented as a "
                 "dataset of its own for reading only; open the whole dataset for writing instead, or create a "
                 "new sub-dataset ('%s#/NEW')", s->archive_path, s->group ? s->group : s->prefix, s->archive_path);
        rc = NC_EPERM;
        goto fail;
    }
    mzn_trace("%s %s [%s] (mode 0x%x, dataset prefix '%s', compatibility view %s)", create ? "create" : "open", url,
              s->archive_path, (unsigned)mode, s->prefix, view_enabled ? "on" : "off");
    mzn_registry_note_opened(s);
    *out = s;
    return NC_NOERR;
fail:
    /* Discarded, not closed: closing a created store would publish it, replacing an existing archive with an
     * empty one. */
    if (s->archive) mmzip_discard(s->archive);
    free_session(s);
    return rc;
}

int mzn_session_close(mzn_session *s, int deleteit) {
    int rc = NC_NOERR;
    mzn_registry_forget(s);
    int discard = deleteit || s->discard;
    if (s->writable && !discard) rc = mzn_publish(s, MZN_PUBLISH_FINAL);
    if (!discard && rc == NC_NOERR) mzn_root_slot_abandon(s); /* never filled: no root .zgroup */
    mzv_close(s->view);
    if (s->writable && (discard || rc != NC_NOERR)) {
        /* A create that never published leaves no trace: no file, or the archive it was to replace intact. */
        mmzip_discard(s->archive);
    } else {
        int st = mmzip_close(s->archive);
        if (st != MMZIP_OK && rc == NC_NOERR) {
            mzn_diag("%s", mmzip_last_error());
            rc = mzn_nc_error(st);
        }
    }
    /* nc_abort of a create that an nc_sync already published deletes the dataset, as netCDF does. */
    if (deleteit && s->created && !s->group && s->published && unlink(s->archive_path) != 0 && errno != ENOENT)
        mzn_diag("%s: cannot remove the aborted dataset: %s", s->archive_path, strerror(errno));
    mzn_trace("close %s (deleteit %d) -> %d", s->archive_path, deleteit, rc);
    free_session(s);
    return rc;
}

/* The view's answer for key: 1 with data, 0 if the view does not translate it, or a netCDF error. */
static int from_view(mzn_session *s, const char *key, const void **data, size_t *len) {
    int r = mzv_get(s->view, key, data, len);
    if (r < 0) mzn_diag("%s: %s: the compatibility view cannot present this object (netCDF error %d)",
                        s->archive_path, key, r);
    return r;
}

int mzn_session_peek(mzn_session *s, const char *key, const void **data, size_t *len) {
    if (!key || key[0] != '/') return NC_EEMPTY;
    int r = from_view(s, key, data, len);
    if (r != 0) return r < 0 ? r : NC_NOERR;
    mzn_blob *b = mzn_keymap_get(&s->pending_metadata, key);
    if (b) {
        *data = b->bytes;
        *len = b->len;
        return NC_NOERR;
    }
    char *name = mzn_session_entry_name(s, key);
    if (!name) return NC_ENOMEM;
    uint64_t size = 0;
    int st = mmzip_get(s->archive, name, data, &size);
    if (st != MMZIP_OK && st != MMZIP_ENOTFOUND) mzn_diag("%s", mmzip_last_error());
    free(name);
    *len = (size_t)size;
    return mzn_nc_error(st);
}

int mzn_session_len(mzn_session *s, const char *key, mzn_size64 *size) {
    *size = 0;
    if (!key || key[0] != '/') return NC_EEMPTY;
    const void *data;
    size_t len;
    int r = from_view(s, key, &data, &len);
    if (r < 0) return r;
    if (r == 0) {
        mzn_blob *b = mzn_keymap_get(&s->pending_metadata, key);
        if (b) {
            len = b->len;
        } else {
            char *name = mzn_session_entry_name(s, key);
            if (!name) return NC_ENOMEM;
            uint64_t n = 0;
            int st = mmzip_size(s->archive, name, &n);
            free(name);
            if (st != MMZIP_OK) return mzn_nc_error(st);
            len = (size_t)n;
        }
    }
    *size = len;
    return NC_NOERR;
}

int mzn_session_exists(mzn_session *s, const char *key) {
    mzn_size64 ignored;
    return mzn_session_len(s, key, &ignored);
}

static int is_zattrs_key(const char *key) {
    size_t n = strlen(key);
    return n >= 8 && strcmp(key + n - 8, "/.zattrs") == 0;
}

/* Copies [start, start + count) of an object of len bytes at data into content. */
static int copy_range(mzn_session *s, const char *key, const void *data, size_t len, mzn_size64 start,
                      mzn_size64 count, void *content) {
    if (start > len || count > len - start) {
        mzn_diag("%s: %s: read of bytes %llu..%llu past the end of the %zu-byte object", s->archive_path, key,
                 start, start + count, len);
        return NC_EEDGE;
    }
    if (count) memcpy(content, (const unsigned char *)data + start, (size_t)count);
    return NC_NOERR;
}

/* Copies from the archive; mmzip_read() takes large stored ranges straight from the page cache (pread)
 * rather than through the mapping, since NCZarr wants its own copy anyway. */
static int read_archived(mzn_session *s, const char *key, mzn_size64 start, mzn_size64 count, void *content) {
    char *name = mzn_session_entry_name(s, key);
    if (!name) return NC_ENOMEM;
    size_t got = 0;
    int st = mmzip_read(s->archive, name, start, content, (size_t)count, &got);
    free(name);
    if (st != MMZIP_OK) {
        if (st != MMZIP_ENOTFOUND) mzn_diag("%s", mmzip_last_error());
        return mzn_nc_error(st);
    }
    if (got != count) {
        mzn_diag("%s: %s: read of bytes %llu..%llu past the end of the object", s->archive_path, key, start,
                 start + count);
        return NC_EEDGE;
    }
    return NC_NOERR;
}

int mzn_session_read(mzn_session *s, const char *key, mzn_size64 start, mzn_size64 count, void *content) {
    if (!key || key[0] != '/') return NC_EEMPTY;
    const void *data;
    size_t len;
    int rc = from_view(s, key, &data, &len);
    if (rc < 0) return rc;
    if (rc == 1) {
        rc = copy_range(s, key, data, len, start, count, content);
    } else {
        mzn_blob *b = mzn_keymap_get(&s->pending_metadata, key);
        rc = b ? copy_range(s, key, b->bytes, b->len, start, count, content)
               : read_archived(s, key, start, count, content);
    }
    if (rc != NC_NOERR) return rc;
    /* Once netCDF-C has seen a .zattrs, its later rewrites of it are deliberate (see metadata_guard.h). */
    if (s->writable && is_zattrs_key(key) && mzn_keymap_put(&s->attrs_read, key, s, NULL) != 0) return NC_ENOMEM;
    return NC_NOERR;
}

/* Collects the distinct child names below a directory of the archive or of the pending metadata. */
typedef struct child_names {
    const char *dir;   /* entry-name prefix of the directory, ending in '/' (or "" for the root) */
    size_t dir_len;
    mzn_keymap seen;
    int failed;
} child_names;

static void add_child(child_names *c, const char *rest, size_t rest_len) {
    const char *slash = memchr(rest, '/', rest_len);
    size_t n = slash ? (size_t)(slash - rest) : rest_len;
    if (n == 0 || c->failed) return; /* the directory's own entry ("dir/") */
    char *name = strndup(rest, n);
    if (!name || mzn_keymap_put(&c->seen, name, NULL, NULL) != 0) c->failed = 1;
    free(name);
}

static int collect_entry(const mmzip_entry_info *info, void *ctx) {
    child_names *c = ctx;
    if (info->name_len >= c->dir_len) add_child(c, info->name + c->dir_len, info->name_len - c->dir_len);
    return c->failed ? MMZIP_ENOMEM : 0;
}

/* A node the view presents (Zarr v3: possibly known only from consolidated metadata) under the directory
 * being listed. */
typedef struct view_children {
    child_names *names;
    const char *dir; /* the listed directory relative to the dataset, "" for the root */
    size_t dir_len;
} view_children;

static void add_view_child(void *ctx, const char *path) {
    view_children *vc = ctx;
    size_t n = strlen(path);
    if (vc->dir_len == 0) add_child(vc->names, path, n);
    else if (n > vc->dir_len && strncmp(path, vc->dir, vc->dir_len) == 0 && path[vc->dir_len] == '/')
        add_child(vc->names, path + vc->dir_len + 1, n - vc->dir_len - 1);
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int mzn_session_search(mzn_session *s, const char *prefix, void *nclist) {
    if (!prefix || prefix[0] != '/') return NC_NOERR;
    /* "/" is the dataset root; "/a/b" has the children "a/b/..." */
    size_t plen = strlen(prefix);
    while (plen > 1 && prefix[plen - 1] == '/') plen--;
    int root = plen == 1;
    char *dir = malloc(s->prefix_len + plen + 1);
    if (!dir) return NC_ENOMEM;
    memcpy(dir, s->prefix, s->prefix_len);
    size_t dlen = s->prefix_len;
    if (!root) {
        memcpy(dir + dlen, prefix + 1, plen - 1);
        dlen += plen - 1;
        dir[dlen++] = '/';
    }
    dir[dlen] = '\0';
    child_names c = {dir, dlen, MZN_KEYMAP_INIT, 0};
    int st = mmzip_list_ex(s->archive, dir, MMZIP_LIST_NO_DATA_OFFSET, collect_entry, &c);
    int rc = NC_NOERR;
    if (st != MMZIP_OK && !c.failed) {
        mzn_diag("%s", mmzip_last_error());
        rc = mzn_nc_error(st);
    }
    /* Metadata written in this session is not in the archive yet. */
    const char *key;
    for (size_t i = 0; rc == NC_NOERR && mzn_keymap_next(&s->pending_metadata, &i, &key, NULL);) {
        if (root) add_child(&c, key + 1, strlen(key + 1));
        else if (strncmp(key, prefix, plen) == 0 && key[plen] == '/')
            add_child(&c, key + plen + 1, strlen(key + plen + 1));
    }
    view_children vc = {&c, prefix + 1, root ? 0 : plen - 1};
    if (rc == NC_NOERR) mzv_for_each_node(s->view, add_view_child, &vc);
    if (c.failed) rc = NC_ENOMEM;
    char **names = NULL;
    size_t n = 0;
    if (rc == NC_NOERR && c.seen.count) {
        names = malloc(c.seen.count * sizeof *names);
        if (!names) rc = NC_ENOMEM;
        for (size_t i = 0; names && mzn_keymap_next(&c.seen, &i, &key, NULL);) names[n++] = (char *)key;
    }
    if (names) qsort(names, n, sizeof *names, compare_names);
    for (size_t i = 0; rc == NC_NOERR && i < n; i++) {
        char *copy = strdup(names[i]);
        if (!copy || !mzn_nclistpush(nclist, copy)) {
            free(copy);
            rc = NC_ENOMEM;
        }
    }
    free(names);
    mzn_keymap_clear(&c.seen, NULL);
    free(dir);
    return rc;
}
