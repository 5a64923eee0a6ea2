/* cmd_recover.c - mmzip recover: repair an archive to its last commit, saying what was done. */
#include "cli.h"

#include <sys/stat.h>

typedef struct {
    unsigned done, kept, temps;
} tally;

static void say(const mmzip_recovery_action *a, void *ctx) {
    tally *t = ctx;
    if (a->kind == MMZIP_RECOVERY_KEPT) t->kept++;
    else if (a->kind == MMZIP_RECOVERY_TEMP_FILE) t->temps++; /* beside the archive, not in it */
    else t->done++;
    printf("%s\n", a->message);
}

static int run(int argc, char **argv) {
    if (argc != 2) return cli_usage(&cmd_recover, argc < 2 ? "missing ARCHIVE" : "too many arguments");
    const char *archive = argv[1];
    if (cli_archive_name("recover", archive, 0)) return EXIT_FAIL;
    tally t = {0, 0, 0};
    int changed = 0;
    struct stat before, after;
    int sized = stat(archive, &before) == 0;
    int st = mmzip_recover(archive, say, &t, &changed);
    if (st) return cli_fail("recover", st);
    if (changed && sized && stat(archive, &after) == 0 && after.st_size != before.st_size)
        printf("%s: the file is now %llu bytes (it was %llu)\n", archive, (unsigned long long)after.st_size,
               (unsigned long long)before.st_size);
    if (!changed && t.done == 0)
        printf("%s: nothing %sto recover; the archive was not changed%s\n", archive, t.temps ? "else " : "",
               t.kept ? " (what is kept above stays as it is; new entries are appended after it)" : "");
    else if (changed && t.done == 0) /* every change is noted; this would be a gap in the notes */
        printf("%s: the archive was rewritten to its last commit\n", archive);
    return EXIT_OK;
}

const command cmd_recover = {
    "recover", "repair an archive left by a killed writer to its last commit, saying what was done",
    "usage: mmzip recover ARCHIVE\n\n"
    "Repairs ARCHIVE to its last commit and prints one line per thing done, naming the entry concerned:\n"
    "  - an entry being edited in place (an HDF5 member written through the mmzip driver) when its writer\n"
    "    was killed is restored to its last commit from the undo journal ARCHIVE.mmzip-undo (the line gives\n"
    "    the bytes written back), and the journal removed;\n"
    "  - an entry being modified in place through a writable view (mmzip.open(..., 'r+') arrays) when its\n"
    "    writer was killed is kept as that writer left it (its values may hold only part of the writer's\n"
    "    changes: there is no undo for those), its CRC-32 recomputed, and the marker file\n"
    "    ARCHIVE.mmzip-inplace that named it removed;\n"
    "  - bytes an interrupted mmzip commit left after the last end records are cut off (with their count);\n"
    "  - a directory that is not behind the last entry (the writer had moved it) is written back there; the\n"
    "    line says by how much the file shrank (bytes no committed entry refers to);\n"
    "  - temporary files of packs and creations killed before their rename are removed.\n"
    "Only what mmzip's own protocol leaves behind is repaired, recognized by the records only mmzip writes;\n"
    "anything else (a wrong CRC-32 without a marker, a missing local header, bytes after another writer's\n"
    "end records, gaps around its directory) is kept byte for byte and said to be kept, so that every entry\n"
    "other readers read is still there; a foreign archive with bytes before it (a self-extractor's stub,\n"
    "a ZIP in another archive's comment) is not rewritten either. If nothing had to be done, it prints\n"
    "  ARCHIVE: nothing to recover; the archive was not changed\n"
    "and the file is byte for byte as it was. Every writable open repairs the same way (silently);\n"
    "'mmzip check' shows what recover would do, as its 'recover:' lines.\n",
    run};
