/* cmd_recover.c - mmzip recover: repair an archive to its last commit. */
#include "cli.h"

static int run(int argc, char **argv) {
    if (argc != 2) return cli_usage(&cmd_recover, argc < 2 ? "missing ARCHIVE" : "too many arguments");
    const char *archive = argv[1];
    if (cli_archive_name("recover", archive, 0)) return EXIT_FAIL;
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
    if (discarded == 0) {
        printf("%s: nothing to recover; the archive ends with its last commit\n", archive);
    } else {
        printf("%s: recovered to its last commit (%llu entries); discarded %s of an interrupted mmzip write\n",
               archive, (unsigned long long)info.entries, cli_bytes(discarded, b, sizeof b));
    }
    if (info.append_from || info.torn_tail)
        printf("%s: kept as found, not mmzip's to repair: %s%s%s; 'mmzip check' describes it, and new entries "
               "are appended after it\n", archive,
               info.append_from ? "bytes around the foreign end records or directory" : "",
               info.append_from && info.torn_tail ? ", and " : "",
               info.torn_tail ? "entries whose local header is missing or disagrees with the directory" : "");
    return EXIT_OK;
}

const command cmd_recover = {
    "recover", "repair an archive left by a killed writer to its last commit",
    "usage: mmzip recover ARCHIVE\n\n"
    "Repairs ARCHIVE to its last commit: bytes an interrupted mmzip commit left after the last end records\n"
    "are cut off, and a directory the writer had moved is put back behind the last entry. Only what\n"
    "mmzip's own protocol leaves behind is repaired, recognized by the records only mmzip writes; anything\n"
    "else (a wrong CRC-32, a missing local header, bytes after another writer's end records, gaps around its\n"
    "directory) is kept byte for byte, so that every entry other readers read is still there. Committed\n"
    "entries are never touched. Every writable open does the same; 'mmzip check' shows it as a dry run.\n",
    run};
