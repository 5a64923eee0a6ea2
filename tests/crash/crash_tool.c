/*
 * crash_tool.c - the process the crash tests kill, and the checks they run afterwards.
 *
 *   crash_tool write    SCENARIO ARCHIVE LOG [durable|hold]
 *                                                       run the scenario, appending "k" to LOG after commit k;
 *                                                       with "hold", write "held" to LOG after the last step and
 *                                                       wait to be killed instead of exiting, so that a test
 *                                                       that kills it never finds it gone
 *   crash_tool verify   SCENARIO ARCHIVE K              read-only open (no repair): state K or K+1, exactly
 *   crash_tool recover  SCENARIO ARCHIVE K              writable open (repairs): state K or K+1, exactly
 *   crash_tool reader   SCENARIO ARCHIVE STATES         open and refresh in a loop while a writer runs, until
 *                                                       it has seen STATES different committed states; every
 *                                                       snapshot must be exactly a committed state
 *   crash_tool pack     SCENARIO ARCHIVE -              mmzip_pack in place
 *   crash_tool write    SCENARIO ARCHIVE LOG shared     the scenario through a shared writer (MMZIP_SHARED)
 *   crash_tool shared-next SCENARIO ARCHIVE -|pre       a second shared writer: opens (creating an empty archive
 *                                                       if there is none; with "pre", puts "pre/x" in it first,
 *                                                       so that its view is a ZIP64 archive whose later changes
 *                                                       may be additions), prints "opened", reads K from
 *                                                       standard input (the last commit of a writer killed
 *                                                       meanwhile), puts "next/x" in one transaction (which
 *                                                       repairs what the killed one left), closes, and checks
 *                                                       read-only that the archive is state K or K+1 plus
 *                                                       next/x (and pre/x), exactly ("state J")
 * Linked with the test build of the library (crash points from MMZIP_CRASH_AT, see plugin/src/io.c).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scenario.h"

static int fail(const char *what) {
    fprintf(stderr, "crash_tool: %s: %s\n", what, mmzip_last_error());
    return 2;
}

static int do_write(const char *name, const char *archive, const char *log, int durable, int hold, int shared,
                    int sessions) {
    /* A held writer must not outlive the test that was to kill it. */
    if (hold && prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return 2;
    mmzip_options o;
    mmzip_options_init(&o);
    if (durable) o.flags |= MMZIP_DURABLE;
    if (shared) {
        o.flags |= MMZIP_SHARED;
        o.lock_wait_ms = MMZIP_WAIT_FOREVER;
    }
    mmzip_t *h;
    if (mmzip_open(archive, "w+", &o, &h) != MMZIP_OK) return fail("open");
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return 2;
    int n = scenario_steps(name);
    for (int k = 1; k <= n; k++) {
        /* One session per step: what `mmzip put` in a loop does, each open finding the slack the last close
         * left. */
        if (sessions && k > 1 && (mmzip_close(h) != MMZIP_OK || mmzip_open(archive, "r+", &o, &h) != MMZIP_OK))
            return fail("reopen");
        if (scenario_apply(h, name, k) != MMZIP_OK) return fail("apply");
        char line[32];
        int len = snprintf(line, sizeof line, "%d\n", k);
        if (write(fd, line, (size_t)len) != len) return 2;
    }
    if (hold) {
        /* Provably alive until the kill: the test never has to guess whether the writer is still writing. */
        if (write(fd, "held\n", 5) != 5) return 2;
        for (;;) pause();
    }
    close(fd);
    if (mmzip_close(h) != MMZIP_OK) return fail("close");
    return 0;
}

/* The archive must hold exactly state k or state k+1 (the commit in flight may have reached its commit
 * point before the kill). */
static int do_verify(const char *name, const char *archive, int k, const char *mode) {
    mmzip_t *h;
    int st = mmzip_open(archive, mode, NULL, &h);
    if (st != MMZIP_OK) {
        fprintf(stderr, "crash_tool: open(%s) failed: %s\n", mode, mmzip_last_error());
        return 1;
    }
    int n = scenario_steps(name);
    for (int j = k; j <= k + 1 && j <= n; j++) {
        state s;
        scenario_state(name, j, &s);
        int ok = scenario_matches(h, &s, 0);
        free(s.items);
        if (ok && mode[1] == '+' && strcmp(name, "edits") == 0 && !scenario_room_clear(h, archive, 1)) {
            mmzip_close(h);
            return 1;
        }
        if (ok) {
            printf("state %d\n", j);
            return mmzip_close(h) == MMZIP_OK ? 0 : fail("close");
        }
    }
    fprintf(stderr, "crash_tool: %s holds neither state %d nor %d; against state %d:\n", archive, k, k + 1, k);
    state s;
    scenario_state(name, k, &s);
    scenario_matches(h, &s, 1);
    free(s.items);
    mmzip_close(h);
    return 1;
}

/* Which step the snapshot claims (the highest step marker), then a full comparison with that state. */
static int snapshot_state(mmzip_t *h, const char *name, int from) {
    int n = scenario_steps(name), at = -1;
    char key[48];
    for (int j = from; j <= n; j++) {
        snprintf(key, sizeof key, "step/%d", j);
        if (mmzip_exists(h, key)) at = j;
        else if (j > from) break;
    }
    if (at < 0) {
        snprintf(key, sizeof key, "step/%d", 1);
        if (!mmzip_exists(h, key)) at = 0;
        else return -1;
    }
    state s;
    scenario_state(name, at, &s);
    int ok = scenario_matches(h, &s, 1);
    free(s.items);
    return ok ? at : -1;
}

/* Ends when it has seen `want` different committed states, however long that takes on this machine (the
 * test keeps a writer going until then; CTest's timeout catches a hang). */
static int do_reader(const char *name, const char *archive, int want) {
    int last = 0, snapshots = 0, opens = 0, states = 0, previous = -1;
    ino_t ino = 0;
    mmzip_t *h = NULL;
    while (states < want) {
        if (!h || snapshots % 7 == 0) {
            if (h) mmzip_close(h);
            int st = mmzip_open(archive, "r", NULL, &h);
            if (st == MMZIP_ENOENT) { h = NULL; continue; } /* the writer has not created it yet */
            if (st != MMZIP_OK) return fail("reader open");
            struct stat sb;
            if (stat(archive, &sb) == 0 && sb.st_ino != ino) { /* a new archive: a new history */
                ino = sb.st_ino;
                last = 0;
            }
            opens++;
        } else {
            int st = mmzip_refresh(h);
            if (st == MMZIP_ESTALE) { /* the test recreated the archive: a new history starts */
                mmzip_close(h);
                h = NULL;
                last = 0;
                continue;
            }
            if (st != MMZIP_OK) return fail("reader refresh");
        }
        int at = snapshot_state(h, name, last);
        if (at < 0) {
            fprintf(stderr, "crash_tool: a reader saw a state that was never committed (after %d)\n", last);
            return 1;
        }
        if (at < last) {
            fprintf(stderr, "crash_tool: a reader went back from state %d to %d\n", last, at);
            return 1;
        }
        if (at != previous) states++;
        previous = at;
        last = at;
        snapshots++;
    }
    if (h) mmzip_close(h);
    printf("reader: %d snapshots (%d opens) of %d different states, last state %d, every one exactly committed\n",
           snapshots, opens, states, last);
    return 0;
}

/* See the top of the file: the next shared writer after a killed one. */
static int do_shared_next(const char *name, const char *archive, int pre) {
    mmzip_options o;
    mmzip_options_init(&o);
    o.flags |= MMZIP_SHARED;
    o.lock_wait_ms = MMZIP_WAIT_FOREVER;
    mmzip_t *h;
    if (mmzip_open(archive, "w+", &o, &h) != MMZIP_OK) return fail("shared open");
    uint8_t pre_bytes[300];
    scenario_content("pre/x", 1, pre_bytes, sizeof pre_bytes);
    if (pre && mmzip_put(h, "pre/x", pre_bytes, sizeof pre_bytes, 0) != MMZIP_OK) return fail("shared put pre/x");
    printf("opened\n");
    fflush(stdout);
    int k;
    if (scanf("%d", &k) != 1) return 2;
    uint8_t buf[1000];
    scenario_content("next/x", 1, buf, sizeof buf);
    if (mmzip_put(h, "next/x", buf, sizeof buf, 0) != MMZIP_OK) return fail("shared put");
    if (mmzip_close(h) != MMZIP_OK) return fail("shared close");
    if (mmzip_open(archive, "r", NULL, &h) != MMZIP_OK) return fail("read-only open");
    int n = scenario_steps(name);
    for (int j = k; j <= k + 1 && j <= n; j++) {
        state s;
        scenario_state(name, j, &s);
        item *more = realloc(s.items, (size_t)(s.n + 2) * sizeof *more);
        if (!more) return 2;
        s.items = more;
        snprintf(s.items[s.n].key, sizeof s.items[s.n].key, "next/x");
        s.items[s.n].version = 1;
        s.items[s.n].len = sizeof buf;
        s.n++;
        if (pre) {
            snprintf(s.items[s.n].key, sizeof s.items[s.n].key, "pre/x");
            s.items[s.n].version = 1;
            s.items[s.n].len = sizeof pre_bytes;
            s.n++;
        }
        int ok = scenario_matches(h, &s, 0);
        if (!ok && j == k) {
            fprintf(stderr, "against state %d + next/x:\n", k);
            scenario_matches(h, &s, 1);
        }
        free(s.items);
        if (ok) {
            printf("state %d\n", j);
            return mmzip_close(h) == MMZIP_OK ? 0 : fail("close");
        }
    }
    fprintf(stderr, "crash_tool: %s holds neither state %d nor %d plus next/x\n", archive, k, k + 1);
    mmzip_close(h);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: crash_tool write|verify|recover|reader SCENARIO ARCHIVE ARG [durable|hold|shared|sessions]\n");
        return 2;
    }
    const char *cmd = argv[1], *name = argv[2], *archive = argv[3];
    if (scenario_steps(name) < 0) return 2;
    if (strcmp(cmd, "write") == 0)
        return do_write(name, archive, argv[4], argc > 5 && strcmp(argv[5], "durable") == 0,
                        argc > 5 && strcmp(argv[5], "hold") == 0, argc > 5 && strcmp(argv[5], "shared") == 0,
                        argc > 5 && strcmp(argv[5], "sessions") == 0);
    if (strcmp(cmd, "shared-next") == 0) return do_shared_next(name, archive, strcmp(argv[4], "pre") == 0);
    if (strcmp(cmd, "verify") == 0) return do_verify(name, archive, atoi(argv[4]), "r");
    if (strcmp(cmd, "recover") == 0) return do_verify(name, archive, atoi(argv[4]), "r+");
    if (strcmp(cmd, "reader") == 0) return do_reader(name, archive, atoi(argv[4]));
    if (strcmp(cmd, "pack") == 0) return mmzip_pack(archive, NULL, NULL) == MMZIP_OK ? 0 : fail("pack");
    return 2;
}
