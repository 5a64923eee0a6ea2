/* test_split_name.c - mmzip_split_name(), the one rule for names holding "#/", against its contract in
 * mmzip.h: what each reading needs on disk, the flags, ambiguity, and that it creates nothing. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mmzip_ctest.h"

static void make_archive(const char *path) {
    mmzip_t *h;
    OK(mmzip_open(path, "w", NULL, &h));
    OK(mmzip_put(h, "m.txt", "member\n", 7, 0));
    OK(mmzip_close(h));
}

static void write_file(const char *path, const void *data, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, data, n) == (ssize_t)n);
    close(fd);
}

/* Entries of the working directory, to show that a call created nothing. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}

/* The archive length the rule gives name, or -1 (with the status in *st). */
static long cut_of(const char *name, unsigned flags, int *st) {
    size_t cut = 12345;
    *st = mmzip_split_name(name, flags, &cut);
    return *st == MMZIP_OK ? (long)cut : -1;
}

#define CUT(name, flags, want)                                                                              \
    do {                                                                                                   \
        int st__;                                                                                          \
        long got__ = cut_of((name), (flags), &st__);                                                       \
        if (got__ != (long)(want)) {                                                                       \
            fprintf(stderr, "%s:%d: split of '%s' (flags %u): %ld, want %ld (%s: %s)\n", __FILE__, __LINE__,  \
                    (name), (unsigned)(flags), got__, (long)(want), mmzip_strerror(st__), mmzip_last_error()); \
            ctest_failures++;                                                                              \
        }                                                                                                  \
    } while (0)

static const unsigned BOTH = MMZIP_NAME_CREATE | MMZIP_NAME_CREATE_ARCHIVE;

static void test_arguments(void) {
    size_t cut;
    FAILS_WITH(mmzip_split_name(NULL, 0, &cut), MMZIP_EINVAL, "NULL");
    FAILS_WITH(mmzip_split_name("a.zip", 0, NULL), MMZIP_EINVAL, "NULL");
    FAILS_WITH(mmzip_split_name("a.zip", 4, &cut), MMZIP_EINVAL, "unknown flags");
    /* No "#/": the name itself, existing or not, any flags. */
    CUT("missing#one.zip", 0, strlen("missing#one.zip"));
    CUT("missing#one.zip", BOTH, strlen("missing#one.zip"));
    CUT("", 0, 0);
}

static void test_readings(void) {
    int before = count_entries(".");
    /* "d#/x.zip" existing: the file, with every flag, even when "d" is an archive too... */
    mkdir("d#", 0755);
    make_archive("d#/x.zip");
    for (unsigned f = 0; f <= BOTH; f++) CUT("d#/x.zip", f, strlen("d#/x.zip"));
    CHECK(access("d", F_OK) != 0);
    /* ... and its member when followed by "#/". */
    CUT("d#/x.zip#/g/sub", 0, strlen("d#/x.zip"));
    CUT("d#/x.zip#/g/sub", BOTH, strlen("d#/x.zip"));
    CUT("d#/x.zip#/", 0, strlen("d#/x.zip"));
    /* A member whose name holds "#/" too. */
    CUT("d#/x.zip#/g#/h", 0, strlen("d#/x.zip"));
    /* Not a ZIP: a text file, an empty file, a directory. */
    write_file("t.zip", "a text file, long enough to hold an end record\n", 48);
    write_file("empty.zip", "", 0);
    FAILS_WITH(mmzip_split_name("t.zip#/g", 0, &(size_t){0}), MMZIP_ENOENT, "'t.zip' is not a ZIP archive");
    FAILS_WITH(mmzip_split_name("empty.zip#/g", 0, &(size_t){0}), MMZIP_ENOENT, "'empty.zip' is not a ZIP");
    FAILS_WITH(mmzip_split_name("d#/#/g", 0, &(size_t){0}), MMZIP_ENOENT, "not a ZIP archive");
    FAILS_WITH(mmzip_split_name("t.zip#/g", MMZIP_NAME_CREATE, &(size_t){0}), MMZIP_ENOENT, "cannot be created");
    /* Bytes before the archive (a self-extractor): a ZIP by its end record (here an empty archive's). */
    {
        char sfx[1000 + 22] = {0};
        memset(sfx, '#', 1000);
        memcpy(sfx + 1000, "PK\5\6", 4);
        write_file("sfx.zip", sfx, sizeof sfx);
        CUT("sfx.zip#/m.txt", 0, strlen("sfx.zip"));
        sfx[1000] = 'Q'; /* no end record: no ZIP */
        write_file("nozip.bin", sfx, sizeof sfx);
        FAILS_WITH(mmzip_split_name("nozip.bin#/m", 0, &(size_t){0}), MMZIP_ENOENT, "not a ZIP archive");
    }
    /* A symbolic link to an archive is that archive; a dangling one is a name that exists as written. */
    CHECK(symlink("d#/x.zip", "link.zip") == 0);
    CUT("link.zip#/m.txt", 0, strlen("link.zip"));
    mkdir("dl#", 0755);
    CHECK(symlink("nowhere", "dl#/x") == 0);
    CUT("dl#/x", 0, strlen("dl#/x"));
    CHECK_EQ_U64(count_entries("."), before + 7); /* d#, t.zip, empty.zip, sfx.zip, nozip.bin, link.zip, dl# */
}

static void test_creation(void) {
    int before = count_entries(".");
    /* A new archive for a member only with MMZIP_NAME_CREATE_ARCHIVE. */
    CUT("new.zip#/g", MMZIP_NAME_CREATE_ARCHIVE, strlen("new.zip"));
    CUT("new.zip#/g", BOTH, strlen("new.zip"));
    FAILS_WITH(mmzip_split_name("new.zip#/g", 0, &(size_t){0}), MMZIP_ENOENT, "no such file");
    FAILS_WITH(mmzip_split_name("new.zip#/g", MMZIP_NAME_CREATE, &(size_t){0}), MMZIP_ENOENT, "not a ZIP archive");
    /* ... not in a missing directory. */
    FAILS_WITH(mmzip_split_name("nodir/new.zip#/g", BOTH, &(size_t){0}), MMZIP_ENOENT, "cannot be created");
    /* A new name under an existing directory "n#" is a file there, never a new archive "n". */
    mkdir("n#", 0755);
    CUT("n#/x.zip", MMZIP_NAME_CREATE, strlen("n#/x.zip"));
    CUT("n#/x.zip", BOTH, strlen("n#/x.zip"));
    /* Opening it: neither reading exists. */
    FAILS_WITH(mmzip_split_name("n#/x.zip", 0, &(size_t){0}), MMZIP_ENOENT, "'n' is not a ZIP archive");
    CHECK(access("n#/x.zip", F_OK) != 0 && access("n", F_OK) != 0);
    CHECK_EQ_U64(count_entries("."), before + 1); /* n# only: the rule created nothing */
}

static void test_ambiguity(void) {
    int before = count_entries(".");
    make_archive("a.zip");
    mkdir("a.zip#", 0755);
    write_file("a.zip#/g", "a file\n", 7);
    size_t cut;
    FAILS_WITH(mmzip_split_name("a.zip#/g", 0, &cut), MMZIP_EINVAL, "'a.zip#/g' is ambiguous");
    CHECK(strstr(mmzip_last_error(), "the file 'a.zip#/g'") != NULL);
    CHECK(strstr(mmzip_last_error(), "the member 'g' of the archive 'a.zip'") != NULL);
    FAILS_WITH(mmzip_split_name("a.zip#/g", BOTH, &cut), MMZIP_EINVAL, "ambiguous");
    /* A new name in "a.zip#": created there or in a.zip, ambiguous for creation, a.zip's to open. */
    FAILS_WITH(mmzip_split_name("a.zip#/new", MMZIP_NAME_CREATE, &cut), MMZIP_EINVAL, "(to be created)");
    CUT("a.zip#/new", 0, strlen("a.zip"));
    /* Two archives: "p#/q.zip#/g" where p#/q.zip and p#/q.zip#/g... and "p" is no archive: one reading. */
    mkdir("p#", 0755);
    make_archive("p#/q.zip");
    CUT("p#/q.zip#/g", 0, strlen("p#/q.zip"));
    make_archive("p");
    FAILS_WITH(mmzip_split_name("p#/q.zip#/g", 0, &cut), MMZIP_EINVAL, "the member 'q.zip#/g' of the archive 'p'");
    CHECK_EQ_U64(count_entries("."), before + 4); /* a.zip, a.zip#, p#, p */
}

int main(void) {
    char dir[] = "/tmp/mmzip-split-name-XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0) return 2;
    RUN(test_arguments);
    RUN(test_readings);
    RUN(test_creation);
    RUN(test_ambiguity);
    if (!getenv("MMZIP_KEEP_TMP")) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    }
    return ctest_result();
}
