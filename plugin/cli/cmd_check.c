/* cmd_check.c - mmzip check: verify structure and every CRC. */
#include "cli.h"

#include <string.h>

static void report(const char *msg, void *ctx) {
    int quiet = *(int *)ctx;
    if (!quiet || !strstr(msg, "warning:")) fprintf(stderr, "%s\n", msg);
}

static int run(int argc, char **argv) {
    int quiet = 0;
    const char *archive = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) quiet = 1;
        else if (argv[i][0] == '-') return cli_usage(&cmd_check, "unknown option");
        else if (!archive) archive = argv[i];
        else return cli_usage(&cmd_check, "too many arguments");
    }
    if (!archive) return cli_usage(&cmd_check, "missing ARCHIVE");
    mmzip_t *h;
    int st = mmzip_open(archive, "r", NULL, &h);
    if (st) return cli_fail("check", st);
    st = mmzip_check(h, report, &quiet);
    size_t n = mmzip_count(h);
    mmzip_close(h);
    if (st) return cli_fail("check", st);
    if (!quiet) printf("%s: OK, %zu entries, every local header and CRC-32 verified\n", archive, n);
    return EXIT_OK;
}

const command cmd_check = {
    "check", "verify the structure and every CRC-32",
    "usage: mmzip check [-q] ARCHIVE\n\n"
    "Verifies ARCHIVE without changing it: the end records and central directory, every local header\n"
    "against the directory, every entry's CRC-32 (deflated entries are decoded), and that nothing was\n"
    "left after the last commit by an interrupted writer. Problems are printed on standard error.\n"
    "Exit status 0 if the archive is sound, 1 if any problem was found.\n\n"
    "  -q, --quiet  print nothing on success, and no warnings\n",
    run};
