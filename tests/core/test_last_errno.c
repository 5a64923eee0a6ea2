/* test_last_errno.c - mmzip_last_errno(): the system's errno behind a failure, set with the message, 0 when no
 * system call failed, and per thread. As root (which permissions do not stop) the EACCES case runs in a child
 * that drops to user nobody first. */
#define _GNU_SOURCE
#include "mmzip_ctest.h"

#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[512];

static void test_missing_directory_not_zip(void) {
    mmzip_t *h;
    const char *missing = ctest_path_in(dir, "missing.zip");
    FAILS_WITH(mmzip_open(missing, "r", NULL, &h), MMZIP_ENOENT, "no such archive");
    CHECK_EQ_U64(mmzip_last_errno(), ENOENT);
    FAILS_WITH(mmzip_open(missing, "r+", NULL, &h), MMZIP_ENOENT, "no such archive");
    CHECK_EQ_U64(mmzip_last_errno(), ENOENT);
    FAILS_WITH(mmzip_open(dir, "r", NULL, &h), MMZIP_EINVAL, "not a ZIP archive: Is a directory");
    CHECK_EQ_U64(mmzip_last_errno(), EISDIR);
    FAILS_WITH(mmzip_open(dir, "w+", NULL, &h), MMZIP_EINVAL, "Is a directory");
    CHECK_EQ_U64(mmzip_last_errno(), EISDIR);
    const char *text = ctest_path_in(dir, "text.zip");
    FILE *f = fopen(text, "w");
    CHECK(f != NULL);
    for (int i = 0; f && i < 20; i++) fputs("not a zip archive\n", f);
    if (f) fclose(f);
    FAILS_WITH(mmzip_open(text, "r", NULL, &h), MMZIP_ENOTZIP, "");
    CHECK_EQ_U64(mmzip_last_errno(), 0); /* no system call failed */
    /* A success clears neither the message nor the errno of an earlier failure; the next failure replaces
     * both. A failure without a system error leaves 0, not the errno of the one before. */
    FAILS_WITH(mmzip_open(missing, "r", NULL, &h), MMZIP_ENOENT, "");
    FAILS_WITH(mmzip_open(NULL, "r", NULL, &h), MMZIP_EINVAL, "NULL argument");
    CHECK_EQ_U64(mmzip_last_errno(), 0);
}

static void *fail_in_thread(void *arg) {
    mmzip_t *h;
    int st = mmzip_open((const char *)arg, "r", NULL, &h);
    return (void *)(intptr_t)(st == MMZIP_ENOENT && mmzip_last_errno() == ENOENT);
}

static void test_per_thread(void) {
    mmzip_t *h;
    FAILS_WITH(mmzip_open(dir, "r", NULL, &h), MMZIP_EINVAL, "");
    pthread_t t;
    void *ok = NULL;
    CHECK(pthread_create(&t, NULL, fail_in_thread, (void *)ctest_path_in(dir, "other-missing.zip")) == 0);
    CHECK(pthread_join(t, &ok) == 0);
    CHECK(ok != NULL);
    CHECK_EQ_U64(mmzip_last_errno(), EISDIR); /* this thread's, untouched by the other's failure */
}

static void test_permission(void) {
    const char *arc = ctest_path_in(dir, "perm.zip");
    mmzip_t *h;
    OK(mmzip_open(arc, "w", NULL, &h));
    OK(mmzip_put(h, "k", "v", 1, 0));
    OK(mmzip_close(h));
    CHECK(chmod(dir, 0755) == 0);
    CHECK(chmod(arc, 0600) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0) {
            if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
        } else if (chmod(arc, 0) != 0) {
            _exit(4);
        }
        mmzip_t *c;
        int st = mmzip_open(arc, "r", NULL, &c);
        int ok = st == MMZIP_EIO && mmzip_last_errno() == EACCES && strstr(mmzip_last_error(), "Permission denied");
        if (!ok) fprintf(stderr, "r: %s, errno %d: %s\n", mmzip_strerror(st), mmzip_last_errno(), mmzip_last_error());
        st = mmzip_open(arc, "r+", NULL, &c);
        if (st != MMZIP_EIO || mmzip_last_errno() != EACCES) {
            fprintf(stderr, "r+: %s, errno %d: %s\n", mmzip_strerror(st), mmzip_last_errno(), mmzip_last_error());
            ok = 0;
        }
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fprintf(stderr, "child status %#x\n", status);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof dir, "%s/mmzip_errno_XXXXXX", base);
    if (!mkdtemp(dir)) return 2;
    RUN(test_missing_directory_not_zip);
    RUN(test_per_thread);
    RUN(test_permission);
    int r = ctest_result();
    if (!r) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd)) return 1;
    }
    return r;
}
