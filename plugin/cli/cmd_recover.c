/* cmd_recover.c - mmzip recover: repair an archive to its last commit. */
#include "cli.h"

static int run(int argc, char **argv) {
    if (argc != 2) return cli_usage(&cmd_recover, argc < 2 ? "missing ARCHIVE" : "too many arguments");
    const char *archive = argv[1];
    mmzip_t *h;
    /* A writable open is what repairs; its report says what it found. */
    int st = mmzip_open(archive, "r+", NULL, &h);
    if (st) return cli_fail("recover", st);
    mmzip_info info;
    mmzip_get_info(h, &info);
    st = mmzip_close(h);
    if (st) return cli_fail("recover", st);
    uint64_t moved = 0;
    st = mmzip_recover(archive, &moved);
    if (st) return cli_fail("recover", st);
    unsigned long long discarded = info.recovered_bytes + moved;
    char b[32];
    if (discarded == 0 && info.rolled_back == 0) {
        printf("%s: nothing to recover; the archive ends with its last commit\n", archive);
    } else {
        printf("%s: recovered to its last commit (%llu entries); discarded %s of an interrupted write",
               archive, (unsigned long long)info.entries, cli_bytes(discarded, b, sizeof b));
        if (info.rolled_back)
            printf("; rolled back %llu torn entr%s at the end", (unsigned long long)info.rolled_back,
                   info.rolled_back == 1 ? "y" : "ies");
        printf("\n");
    }
    return EXIT_OK;
}

const command cmd_recover = {
    "recover", "repair an archive left by a killed writer to its last commit",
    "usage: mmzip recover ARCHIVE\n\n"
    "Repairs ARCHIVE to its last commit: bytes an interrupted commit left after the last end records are\n"
    "cut off, a directory the writer had moved is put back behind the last entry, and (for archives\n"
    "written by other implementations of the same protocol) trailing entries whose local header or\n"
    "CRC-32 does not match are rolled back. Committed entries are never touched. Every writable open\n"
    "does the same repair; this command does it explicitly and reports it.\n",
    run};
