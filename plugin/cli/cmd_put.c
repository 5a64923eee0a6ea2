/* cmd_put.c - mmzip put: append one file (or a directory tree) as committed entries. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Files up to this size are read into one reused buffer; larger ones are mapped (no copy of ours). */
#define SMALL_FILE (1u << 20)
#define STREAM_CHUNK (1u << 20)

/* What the progress line counts: files and bytes of the whole command; the core reports within a put. */
typedef struct {
    unsigned long long files, files_total, bytes, bytes_total, cur;
} put_progress;

static put_progress prog;

static void show(unsigned long long bytes_now) {
    char a[32], b[32];
    char line[160];
    if (prog.files_total > 1)
        snprintf(line, sizeof line, "%llu/%llu files, %s of %s", prog.files, prog.files_total,
                 cli_bytes(bytes_now, a, sizeof a), cli_bytes(prog.bytes_total, b, sizeof b));
    else if (prog.bytes_total)
        snprintf(line, sizeof line, "%s of %s", cli_bytes(bytes_now, a, sizeof a),
                 cli_bytes(prog.bytes_total, b, sizeof b));
    else
        snprintf(line, sizeof line, "%s", cli_bytes(bytes_now, a, sizeof a));
    cli_progress_line("put", line, prog.bytes_total ? (double)bytes_now / (double)prog.bytes_total : -1);
}

/* The core's report within one put: done/total is the fraction of that put's work. */
static void core_progress(uint64_t done, uint64_t total, void *ctx) {
    (void)ctx;
    if (total) show(prog.bytes + (unsigned long long)((double)prog.cur * (double)done / (double)total));
}

static int fail_errno(const char *what) {
    fprintf(stderr, "mmzip put: %s: %s\n", what, strerror(errno));
    return EXIT_FAIL;
}

/* A regular file, with its time and mode, through mmzip_putv: byte-identical content writes nothing. */
static int put_regular(mmzip_t *h, const char *key, int fd, const struct stat *st, uint32_t align,
                       const char *what, char **buf, size_t *cap) {
    mmzip_attr attr = {(int64_t)st->st_mtime, (uint32_t)(S_IFREG | (st->st_mode & 07777)), 0};
    uint64_t size = (uint64_t)st->st_size;
    prog.cur = size;
    mmzip_iovec v = {NULL, 0};
    void *map = NULL;
    if (size <= SMALL_FILE) {
        if (*cap < size) {
            free(*buf);
            *buf = malloc(SMALL_FILE);
            *cap = *buf ? SMALL_FILE : 0;
            if (!*buf) return fail_errno(what);
        }
        size_t got = 0;
        while (got < size) {
            ssize_t r = read(fd, *buf + got, size - got);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return fail_errno(what);
            if (r == 0) break; /* shrank since the stat: what is there is the content */
            got += (size_t)r;
        }
        v = (mmzip_iovec){*buf, got};
    } else {
        map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        if (map == MAP_FAILED) return fail_errno(what);
        v = (mmzip_iovec){map, size};
    }
    int s = mmzip_putv(h, key, &v, v.len ? 1 : 0, align, &attr);
    if (map) munmap(map, (size_t)size);
    if (s) return cli_fail("put", s);
    return EXIT_OK;
}

/* The signal that asked a put reading its input to stop (Ctrl-C, kill, a closed terminal), or 0. */
static volatile sig_atomic_t interrupted;
static void on_interrupt(int sig) { interrupted = sig; }

/*
 * A pipe or terminal: read in chunks. While the bytes equal the stored entry's so far, nothing is written
 * (identical content writes nothing, as for a file); at the first difference the matched prefix is copied
 * from the entry into a reservation and the rest of the input follows it.
 */
static int put_stream(mmzip_t *h, const char *key, int fd, uint32_t align, const char *what) {
    const uint8_t *old = NULL;
    uint64_t old_size = 0, len = 0, cap = 0;
    mmzip_entry_info info;
    if (mmzip_stat(h, key, &info) == MMZIP_OK && info.method == 0) {
        const void *p;
        if (mmzip_get(h, key, &p, &old_size) == MMZIP_OK) old = p;
    }
    uint8_t *buf = malloc(STREAM_CHUNK);
    if (!buf) return fail_errno(what);
    uint8_t *view = NULL;
    int s = MMZIP_OK, code = EXIT_OK;
    /* Interrupted while it reads (a pipe can wait for hours), the put rolls back and the close leaves the
     * archive as it was, its slack removed, instead of leaving it for 'mmzip recover': the read returns at
     * the signal (no SA_RESTART) and the loop stops. run() then dies of the signal, as the shell expects. */
    struct sigaction act, old_act[3];
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    memset(&act, 0, sizeof act);
    act.sa_handler = on_interrupt;
    sigemptyset(&act.sa_mask);
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &act, &old_act[i]);
    for (;;) {
        if (interrupted) break;
        ssize_t r = read(fd, buf, STREAM_CHUNK);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            code = fail_errno(what);
            break;
        }
        if (r == 0) break;
        if (!view && old && len + (uint64_t)r <= old_size && memcmp(old + len, buf, (size_t)r) == 0) {
            len += (uint64_t)r;
            show(len);
            continue;
        }
        if (!view || len + (uint64_t)r > cap) {
            uint64_t want = (len + (uint64_t)r) * 2 > (64u << 10) ? (len + (uint64_t)r) * 2 : (64u << 10);
            void *p;
            s = view ? mmzip_reserve_resize(h, key, want, &p) : mmzip_reserve(h, key, want, align, 0, &p);
            if (s) break;
            if (!view && len) memcpy(p, old, (size_t)len); /* the prefix that matched */
            view = p;
            cap = want;
        }
        memcpy(view + len, buf, (size_t)r);
        len += (uint64_t)r;
        show(len);
    }
    free(buf);
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &old_act[i], NULL);
    if (interrupted) {
        cli_progress_done();
        fprintf(stderr, "mmzip put: %s: interrupted (%s) while reading %s: nothing was written\n", key,
                strsignal(interrupted), what);
        mmzip_rollback(h);
        return EXIT_FAIL;
    }
    if (s) return cli_fail("put", s);
    if (code != EXIT_OK) {
        mmzip_rollback(h);
        return code;
    }
    if (!view) {
        if (old && len == old_size) return EXIT_OK; /* identical: nothing to write */
        void *p;
        s = mmzip_reserve(h, key, len, align, 0, &p);
        if (s) return cli_fail("put", s);
        if (len) memcpy(p, old, (size_t)len); /* a prefix of the stored entry */
    }
    s = mmzip_patch(h, key, len);
    if (s) return cli_fail("put", s);
    return EXIT_OK;
}

typedef struct {
    char *rel;
    struct stat st;
} tree_file;

typedef struct {
    tree_file *f;
    size_t n, cap;
    int folders; /* list the folders too, each as "rel/" */
} file_list;

static int add(file_list *l, const char *rel, const char *suffix, const struct stat *st) {
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 64;
        tree_file *p = realloc(l->f, ncap * sizeof *p);
        if (!p) return -1;
        l->f = p;
        l->cap = ncap;
    }
    size_t n = strlen(rel), k = strlen(suffix);
    char *r = malloc(n + k + 1);
    if (!r) return -1;
    memcpy(r, rel, n);
    memcpy(r + n, suffix, k + 1);
    l->f[l->n].rel = r;
    l->f[l->n].st = *st;
    l->n++;
    return 0;
}

static int collect(const char *root, const char *rel, file_list *l) {
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
        if (stat(full, &st) != 0) {
            /* Skipping it would archive less than the tree with exit status 0: a lost file nobody is told of. */
            struct stat link;
            int dangling = errno == ENOENT && lstat(full, &link) == 0 && S_ISLNK(link.st_mode);
            fprintf(stderr, "mmzip put: %s: %s%s; nothing was written\n", full, strerror(errno),
                    dangling ? " (a symbolic link whose target is missing)" : "");
            rc = -1;
            break;
        }
        int nomem = 0;
        if (S_ISDIR(st.st_mode)) {
            nomem = l->folders && add(l, child, "/", &st) != 0;
            if (!nomem) rc = collect(root, child, l);
        } else if (S_ISREG(st.st_mode)) {
            nomem = add(l, child, "", &st) != 0;
        } else {
            /* A FIFO, socket or device holds no file data to archive; zip -r skips them the same way. */
            fprintf(stderr, "mmzip put: %s: skipped (not a regular file or folder)\n", full);
        }
        if (nomem) {
            fprintf(stderr, "mmzip put: out of memory listing %s\n", root);
            rc = -1;
        }
    }
    closedir(d);
    return rc;
}

static int cmp_file(const void *a, const void *b) {
    return strcmp(((const tree_file *)a)->rel, ((const tree_file *)b)->rel);
}

static void free_list(file_list *l) {
    for (size_t i = 0; i < l->n; i++) free(l->f[i].rel);
    free(l->f);
}

static int put_dir(mmzip_t *h, const char *dir, const char *prefix, file_list *l, uint32_t align,
                   const struct stat *archive) {
    /* A prefix names a folder: "lung" puts "lung/.zattrs", not "lung.zattrs". */
    size_t plen = prefix ? strlen(prefix) : 0;
    const char *sep = plen && prefix[plen - 1] != '/' ? "/" : "";
    int code = EXIT_OK, s = mmzip_begin(h);
    if (s) return cli_fail("put", s);
    char *buf = NULL;
    size_t cap = 0;
    prog.files_total = l->n;
    for (size_t i = 0; i < l->n; i++) prog.bytes_total += (unsigned long long)l->f[i].st.st_size;
    for (size_t i = 0; i < l->n && code == EXIT_OK; i++) {
        char full[8192], key[8192];
        /* The archive itself, inside the tree: its bytes change while it is read (zip skips it too). */
        if (archive && l->f[i].st.st_dev == archive->st_dev && l->f[i].st.st_ino == archive->st_ino) {
            fprintf(stderr, "mmzip put: %s/%s: skipped (it is the archive)\n", dir, l->f[i].rel);
            continue;
        }
        if (snprintf(full, sizeof full, "%s/%s", dir, l->f[i].rel) >= (int)sizeof full ||
            snprintf(key, sizeof key, "%s%s%s", plen ? prefix : "", sep, l->f[i].rel) >= (int)sizeof key) {
            fprintf(stderr, "mmzip put: path too long: %s\n", l->f[i].rel);
            code = EXIT_FAIL;
            break;
        }
        if (S_ISDIR(l->f[i].st.st_mode)) { /* a folder entry, "x/", dated and with the mode of the folder */
            mmzip_attr attr = {(int64_t)l->f[i].st.st_mtime, (uint32_t)(S_IFDIR | (l->f[i].st.st_mode & 07777)), 0};
            s = mmzip_putv(h, key, NULL, 0, align, &attr);
            if (s) code = cli_fail("put", s);
            prog.files = i + 1;
            continue;
        }
        int fd = open(full, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            code = fail_errno(full);
            break;
        }
        struct stat st;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            if (S_ISREG(st.st_mode)) code = fail_errno(full);
            else fprintf(stderr, "mmzip put: %s: no longer a regular file\n", full);
            code = EXIT_FAIL;
            close(fd);
            break;
        }
        code = put_regular(h, key, fd, &st, align, full, &buf, &cap);
        close(fd);
        prog.files = i + 1;
        prog.bytes += (unsigned long long)l->f[i].st.st_size;
        show(prog.bytes);
    }
    free(buf);
    cli_progress_done();
    if (code == EXIT_OK) {
        s = mmzip_commit(h);
        if (s) code = cli_fail("put", s);
    } else {
        mmzip_rollback(h);
    }
    return code;
}

static int run(int argc, char **argv) {
    uint32_t align = 0;
    int durable = 0;
    uint32_t wait_ms = 0; /* --wait: shared appending, waiting this long for the writer lock */
    const char *dir = NULL;
    int folders = 0;
    const char *pos[3] = {0};
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "--align") == 0 && i + 1 < argc) || strncmp(argv[i], "--align=", 8) == 0) {
            int bad = cli_parse_align(&cmd_put, argv[i][7] == '=' ? argv[i] + 8 : argv[++i], &align);
            if (bad) return bad;
        }
        else if (strcmp(argv[i], "--durable") == 0) durable = 1;
        else if (strcmp(argv[i], "--wait") == 0) wait_ms = MMZIP_WAIT_FOREVER;
        else if (strncmp(argv[i], "--wait=", 7) == 0) {
            char *end;
            double sec = strtod(argv[i] + 7, &end);
            if (end == argv[i] + 7 || *end || !(sec > 0) || sec > 4000000)
                return cli_usage(&cmd_put, "--wait=SECONDS wants a positive number of seconds");
            wait_ms = (uint32_t)(sec * 1000 + 0.5) ? (uint32_t)(sec * 1000 + 0.5) : 1;
        }
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) dir = argv[++i];
        else if (strcmp(argv[i], "--folders") == 0) folders = 1;
        else if (strcmp(argv[i], "-") != 0 && argv[i][0] == '-') return cli_unknown_option(&cmd_put, argv[i]);
        else if (npos < 3) pos[npos++] = argv[i];
        else return cli_usage(&cmd_put, "too many arguments");
    }
    if (npos < 1 || (!dir && npos < 2)) return cli_usage(&cmd_put, "missing ARCHIVE or KEY");
    if (dir && npos > 2) return cli_usage(&cmd_put, "too many arguments");
    if (folders && !dir) return cli_usage(&cmd_put, "--folders goes with --dir");
    if (cli_archive_name("put", pos[0], 1)) return EXIT_FAIL;

    /* Everything about the input is settled before the archive is opened: a command that cannot run
     * creates no archive. */
    char why[600];
    file_list l = {0};
    int fd = -1;
    struct stat in;
    const char *file = npos > 2 ? pos[2] : "-";
    if (dir) {
        if (stat(dir, &in) != 0) return fail_errno(dir);
        if (!S_ISDIR(in.st_mode)) {
            snprintf(why, sizeof why, "%s is not a directory (without --dir: mmzip put ARCHIVE KEY FILE)", dir);
            return cli_usage(&cmd_put, why);
        }
        l.folders = folders;
        /* With a prefix, the folder it names is an entry too (as zip -r gives DIR/ for DIR). */
        if (folders && npos > 1 && *pos[1] && add(&l, "", "", &in) != 0) {
            free_list(&l);
            return fail_errno(dir);
        }
        if (collect(dir, "", &l) != 0) {
            free_list(&l);
            return EXIT_FAIL;
        }
        if (l.n) qsort(l.f, l.n, sizeof *l.f, cmp_file); /* an empty tree has no array: qsort takes none */
    } else if (strcmp(file, "-") != 0) {
        fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return fail_errno(file);
        if (fstat(fd, &in) != 0 || S_ISDIR(in.st_mode)) {
            close(fd);
            if (!S_ISDIR(in.st_mode)) return fail_errno(file);
            snprintf(why, sizeof why, "%s is a directory: to add the files under it, use "
                     "mmzip put ARCHIVE --dir %s [PREFIX]", file, file);
            return cli_usage(&cmd_put, why);
        }
    } else {
        /* No FILE: standard input. A KEY that names a directory here is a forgotten --dir (give '-' to
         * store standard input under it anyway), and a terminal would wait for typing with no word. */
        if (npos == 2 && stat(pos[1], &in) == 0 && S_ISDIR(in.st_mode)) {
            snprintf(why, sizeof why, "%s is a directory: to add the files under it, use mmzip put ARCHIVE "
                     "--dir %s [PREFIX]; to store standard input under this key, give '-' as FILE", pos[1],
                     pos[1]);
            return cli_usage(&cmd_put, why);
        }
        if (isatty(0))
            return cli_usage(&cmd_put, "no input: FILE is missing and standard input is a terminal (give a FILE, "
                                       "or pipe the data in)");
        fd = 0;
    }

    mmzip_options o;
    mmzip_options_init(&o);
    if (durable) o.flags |= MMZIP_DURABLE;
    /* A new archive gets its name at its first commit: one that waits on its input, or is killed there,
     * leaves no file rather than one other ZIP readers reject. */
    o.flags |= MMZIP_PUBLISH_ON_COMMIT;
    if (wait_ms) {
        /* Queue behind other writers (shared appending): the lock is held for the put's commit only, and
         * a new archive is created by the open (MMZIP_PUBLISH_ON_COMMIT does not apply). */
        o.flags |= MMZIP_SHARED;
        o.lock_wait_ms = wait_ms;
    }
    if (align) o.alignment = align;
    o.progress = core_progress;
    mmzip_t *h;
    int s = mmzip_open(pos[0], "w+", &o, &h);
    if (s) {
        if (fd > 0) close(fd);
        free_list(&l);
        return cli_fail("put", s);
    }
    mmzip_info info;
    if (mmzip_get_info(h, &info) == MMZIP_OK && info.append_from)
        fprintf(stderr, "mmzip put: warning: %s: the archive has bytes mmzip did not write around its end records "
                "or directory ('mmzip check' names them); they are kept, and the new entries go after the end "
                "of the file (%llu)\n", pos[0], (unsigned long long)info.append_from);
    cli_progress_start();
    int code;
    if (dir) {
        struct stat self;
        code = put_dir(h, dir, npos > 1 ? pos[1] : NULL, &l, align, stat(pos[0], &self) == 0 ? &self : NULL);
    } else if (fd > 0 && S_ISREG(in.st_mode)) {
        char *buf = NULL;
        size_t cap = 0;
        prog.bytes_total = (unsigned long long)in.st_size;
        code = put_regular(h, pos[1], fd, &in, align, file, &buf, &cap);
        free(buf);
        show(prog.bytes_total);
    } else {
        code = put_stream(h, pos[1], fd, align, fd ? file : "standard input");
    }
    cli_progress_done();
    if (fd > 0) close(fd);
    free_list(&l);
    /* Stopped or failed: a discard publishes no archive this put was creating (a failed put must not leave a
     * new, empty one behind), and, as a close, leaves one it appended to at rest. */
    s = interrupted || code != EXIT_OK ? mmzip_discard(h) : mmzip_close(h);
    if (s && code == EXIT_OK) code = cli_fail("put", s);
    if (interrupted) {
        /* The archive is as it was: now end as the signal would have ended the command. */
        signal(interrupted, SIG_DFL);
        raise(interrupted);
    }
    return code;
}

const command cmd_put = {
    "put", "append a file (or a directory tree) as committed entries",
    "usage: mmzip put [--align N] [--durable] [--wait[=SECONDS]] ARCHIVE KEY [FILE|-]\n"
    "       mmzip put [--align N] [--durable] [--wait[=SECONDS]] [--folders] ARCHIVE --dir DIRECTORY [PREFIX]\n\n"
    "Appends FILE (or standard input, which must not be a terminal) to ARCHIVE as the stored entry KEY,\n"
    "creating the archive if it does not exist. A KEY that exists is replaced; content identical to the\n"
    "stored entry's writes nothing (the archive is left as it was). The entry is committed when the\n"
    "command returns: a crash before then leaves the archive as it was.\n"
    "With --dir, adds every regular file under DIRECTORY, named by its relative path (under the folder\n"
    "PREFIX: 'lung' and 'lung/' both give lung/.zattrs), in one commit - e.g. a Zarr directory store into\n"
    "a .zarr.zip. No folder entries are written (as zip -r -D), unless --folders is given: then every\n"
    "folder is an entry too, 'x/' (and PREFIX/ for DIRECTORY), dated and with its mode, as zip -r writes.\n"
    "Entries are dated and get Unix modes as zip writes them: a file's modification time and permissions,\n"
    "or for standard input the time of the put and 0644 ($SOURCE_DATE_EPOCH, if set, is the latest time\n"
    "written). Progress goes to standard error when it is a terminal and the command runs over a second.\n\n"
    "  --align N   align entry data to N bytes (power of two, at most the page size; default 64)\n"
    "  --durable   order the commit with fsync so that it survives a power loss\n"
    "  --wait[=SECONDS]\n"
    "              if other writers have the archive, wait for them (in turn, at most SECONDS; without a\n"
    "              value, as long as it takes) instead of failing: the put takes the writer lock for its\n"
    "              commit only, so that any number of 'mmzip put --wait' (and other shared writers) append\n"
    "              to one archive in parallel. A new archive is then created at once, empty, if missing\n"
    "  -h, --help  show this help\n",
    run};
