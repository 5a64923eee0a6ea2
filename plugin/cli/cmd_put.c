/* cmd_put.c - mmzip put: append one file (or a directory tree) as committed entries. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads fd into a reservation: regular files in one go at their size, pipes by doubling the capacity. */
static int put_fd(mmzip_t *h, const char *key, int fd, uint32_t align, const char *what) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fprintf(stderr, "mmzip put: %s: %s\n", what, strerror(errno));
        return EXIT_FAIL;
    }
    uint64_t cap = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 1u << 20, len = 0;
    void *view;
    int s = mmzip_reserve(h, key, cap, align, &view);
    if (s) return cli_fail("put", s);
    for (;;) {
        if (len == cap) {
            if (S_ISREG(st.st_mode)) {
                char probe;
                if (read(fd, &probe, 1) == 0) break;
                lseek(fd, -1, SEEK_CUR);
            }
            cap *= 2;
            s = mmzip_reserve_resize(h, key, cap, &view);
            if (s) return cli_fail("put", s);
        }
        ssize_t r = read(fd, (char *)view + len, (size_t)(cap - len > (1u << 30) ? (1u << 30) : cap - len));
        if (r < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "mmzip put: %s: %s\n", what, strerror(errno));
            mmzip_rollback(h);
            return EXIT_FAIL;
        }
        if (r == 0) break;
        len += (uint64_t)r;
    }
    s = mmzip_patch(h, key, len);
    if (s) return cli_fail("put", s);
    return EXIT_OK;
}

typedef struct {
    char **names;
    size_t n, cap;
} name_list;

static int collect(const char *root, const char *rel, name_list *l) {
    char path[8192];
    if (snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel) >= (int)sizeof path) return -1;
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "mmzip put: %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d)) && rc == 0) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        char child[4096], full[8192];
        if (snprintf(child, sizeof child, "%s%s%s", rel, *rel ? "/" : "", de->d_name) >= (int)sizeof child ||
            snprintf(full, sizeof full, "%s/%s", root, child) >= (int)sizeof full) {
            fprintf(stderr, "mmzip put: path too long under %s\n", root);
            rc = -1;
            break;
        }
        struct stat st;
        if (stat(full, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) rc = collect(root, child, l);
        else if (S_ISREG(st.st_mode)) {
            if (l->n == l->cap) {
                l->cap = l->cap ? l->cap * 2 : 64;
                l->names = realloc(l->names, l->cap * sizeof *l->names);
            }
            l->names[l->n++] = strdup(child);
        }
    }
    closedir(d);
    return rc;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int put_dir(mmzip_t *h, const char *dir, const char *prefix, uint32_t align) {
    name_list l = {0};
    if (collect(dir, "", &l) != 0) return EXIT_FAIL;
    qsort(l.names, l.n, sizeof *l.names, cmp_str);
    int code = EXIT_OK, s = mmzip_begin(h);
    if (s) return cli_fail("put", s);
    for (size_t i = 0; i < l.n && code == EXIT_OK; i++) {
        char full[8192], key[8192];
        if (snprintf(full, sizeof full, "%s/%s", dir, l.names[i]) >= (int)sizeof full ||
            snprintf(key, sizeof key, "%s%s", prefix ? prefix : "", l.names[i]) >= (int)sizeof key) {
            fprintf(stderr, "mmzip put: path too long: %s\n", l.names[i]);
            code = EXIT_FAIL;
            break;
        }
        int fd = open(full, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "mmzip put: %s: %s\n", full, strerror(errno));
            code = EXIT_FAIL;
            break;
        }
        code = put_fd(h, key, fd, align, full);
        close(fd);
        cli_progress("adding", i + 1, l.n);
    }
    cli_progress_done();
    if (code == EXIT_OK) {
        s = mmzip_commit(h);
        if (s) code = cli_fail("put", s);
    } else {
        mmzip_rollback(h);
    }
    for (size_t i = 0; i < l.n; i++) free(l.names[i]);
    free(l.names);
    return code;
}

static int run(int argc, char **argv) {
    uint32_t align = 0;
    int durable = 0;
    const char *dir = NULL;
    const char *pos[3] = {0};
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--align") == 0 && i + 1 < argc) align = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (strncmp(argv[i], "--align=", 8) == 0) align = (uint32_t)strtoul(argv[i] + 8, NULL, 10);
        else if (strcmp(argv[i], "--durable") == 0) durable = 1;
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) dir = argv[++i];
        else if (strcmp(argv[i], "-") != 0 && argv[i][0] == '-') return cli_usage(&cmd_put, "unknown option");
        else if (npos < 3) pos[npos++] = argv[i];
        else return cli_usage(&cmd_put, "too many arguments");
    }
    if (npos < 1 || (!dir && npos < 2)) return cli_usage(&cmd_put, "missing ARCHIVE or KEY");
    if (dir && npos > 2) return cli_usage(&cmd_put, "too many arguments");
    if (cli_archive_name("put", pos[0], 1)) return EXIT_FAIL;
    mmzip_options o;
    mmzip_options_init(&o);
    if (durable) o.flags |= MMZIP_DURABLE;
    /* A new archive gets its name at its first commit: one that waits on its input, or is killed there,
     * leaves no file rather than one other ZIP readers reject. */
    o.flags |= MMZIP_PUBLISH_ON_COMMIT;
    if (align) o.alignment = align;
    mmzip_t *h;
    int s = mmzip_open(pos[0], "w+", &o, &h);
    if (s) return cli_fail("put", s);
    mmzip_info info;
    if (mmzip_get_info(h, &info) == MMZIP_OK && info.append_from)
        fprintf(stderr, "mmzip put: warning: %s: the archive has bytes mmzip did not write around its end records "
                "or directory ('mmzip check' names them); they are kept, and the new entries go after the end "
                "of the file (%llu)\n", pos[0], (unsigned long long)info.append_from);
    int code;
    if (dir) {
        code = put_dir(h, dir, npos > 1 ? pos[1] : NULL, align);
    } else {
        const char *file = npos > 2 ? pos[2] : "-";
        int fd = strcmp(file, "-") == 0 ? 0 : open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "mmzip put: %s: %s\n", file, strerror(errno));
            mmzip_close(h);
            return EXIT_FAIL;
        }
        code = put_fd(h, pos[1], fd, align, file);
        if (fd) close(fd);
    }
    s = mmzip_close(h);
    if (s && code == EXIT_OK) code = cli_fail("put", s);
    return code;
}

const command cmd_put = {
    "put", "append a file (or a directory tree) as committed entries",
    "usage: mmzip put [--align N] [--durable] ARCHIVE KEY [FILE|-]\n"
    "       mmzip put [--align N] [--durable] ARCHIVE --dir DIRECTORY [PREFIX]\n\n"
    "Appends FILE (or standard input) to ARCHIVE as the stored entry KEY, creating the archive if it\n"
    "does not exist. A KEY that exists is replaced; identical content writes nothing. The entry is\n"
    "committed when the command returns: a crash before then leaves the archive as it was.\n"
    "With --dir, adds every regular file under DIRECTORY, named by its relative path (after PREFIX),\n"
    "in one commit - e.g. a Zarr directory store into a .zarr.zip.\n\n"
    "  --align N   align entry data to N bytes (power of two, at most the page size; default 64)\n"
    "  --durable   order the commit with fsync so that it survives a power loss\n"
    "  -h, --help  show this help\n",
    run};
