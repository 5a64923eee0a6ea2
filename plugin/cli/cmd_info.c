/* cmd_info.c - mmzip info: entry counts, live and dead bytes, alignment, writer lock. */
#include "cli.h"

static int run(int argc, char **argv) {
    if (argc != 2) return cli_usage(&cmd_info, argc < 2 ? "missing ARCHIVE" : "too many arguments");
    if (cli_archive_name("info", argv[1], 0)) return EXIT_FAIL;
    mmzip_t *h;
    int st = mmzip_open(argv[1], "r", NULL, &h);
    if (st) return cli_fail("info", st);
    mmzip_info i;
    st = mmzip_get_info(h, &i);
    if (st) {
        mmzip_close(h);
        return cli_fail("info", st);
    }
    /* Each figure says what it counts: the sizes add up to file_bytes, the size every copy of the file moves
     * (ls -l, os.path.getsize), and free_bytes is not data that anybody put. */
    char b[32];
    printf("archive:          %s\n", argv[1]);
    printf("entries:          %llu (listed entries; 'mmzip ls' names them)\n", (unsigned long long)i.entries);
    printf("file_bytes:       %llu (%s: the file's size, what ls -l shows and a copy moves; the sum of the "
           "six figures below and prefix_bytes)\n", (unsigned long long)i.file_size, cli_bytes(i.file_size, b, sizeof b));
    printf("live_bytes:       %llu (local headers, alignment padding and data of the listed entries)\n",
           (unsigned long long)i.live_bytes);
    printf("dead_bytes:       %llu (old versions of replaced or removed entries, and other bytes named by no "
           "directory record; 'mmzip pack' reclaims them)\n", (unsigned long long)i.dead_bytes);
    printf("reserved_bytes:   %llu (room kept after entries that grow in place, such as HDF5 members; a hole on "
           "disk; 'mmzip pack' reclaims it)\n", (unsigned long long)i.reserved_bytes);
    printf("free_bytes:       %llu (slack between the last entry and the directory, where a writer puts its "
           "next entries; a hole on disk; the last writer's close removes it beyond max(64 KiB, 1%% of the "
           "file))\n", (unsigned long long)i.free_bytes);
    printf("kept_bytes:       %llu (below the data, left by directory relocations: the directory the last one "
           "moved away from, kept for readers still reading it, and the holes and partial pages later puts "
           "fill; with free_bytes, within max(64 KiB, 1%% of the file) at rest)\n", (unsigned long long)i.kept_bytes);
    uint64_t allow = (i.file_size - i.free_bytes) / 100 > 65536 ? (i.file_size - i.free_bytes) / 100 : 65536;
    if (!i.writer_locked && i.free_bytes + i.kept_bytes > allow)
        printf("note:             free_bytes and kept_bytes are more than the %llu bytes the file keeps at rest: "
               "its last writer did not close (killed); 'mmzip recover', or the next writable open, removes the "
               "slack\n", (unsigned long long)allow);
    printf("directory_bytes:  %llu (central directory and end records)\n", (unsigned long long)i.directory_bytes);
    printf("prefix_bytes:     %llu (bytes before the archive, such as a self-extractor's stub)\n",
           (unsigned long long)i.prefix_bytes);
    printf("zip64:            %s (%s)\n", i.zip64 ? "yes" : "no",
           i.zip64 ? "ZIP64 end records, which mmzip writes whatever the sizes"
                   : "plain end record only: an empty archive, or one written without ZIP64");
    printf("min_alignment:    %u (the largest power of two, up to %u, that divides every stored entry's data "
           "offset)\n", i.min_alignment, 32768u);
    printf("torn_tail:        %llu (entries hidden because their local header is missing or disagrees with the "
           "directory; kept, not mmzip's to drop)\n", (unsigned long long)i.torn_tail);
    printf("unnamed:          %llu (entries with an empty or NUL-holding name: not listed, kept)\n",
           (unsigned long long)i.unnamed);
    printf("writer_lock:      %s\n", !i.locks_supported ? "unsupported by this file system"
                                     : i.writer_locked ? "held (a writer has the archive open)"
                                                       : "free (no writer has the archive open)");
    printf("unfinished_edits: %llu (entries whose in-place edit a killed or running writer left unfinished%s)\n",
           (unsigned long long)i.edits_unfinished,
           i.edits_unfinished ? ": see the warnings; 'mmzip recover' repairs those of killed writers" : "");
    cli_warn_unfinished("info", h, argv[1]);
    mmzip_close(h);
    return EXIT_OK;
}

const command cmd_info = {
    "info", "show entries, live and dead bytes, alignment and the writer lock",
    "usage: mmzip info ARCHIVE\n\n"
    "Prints one figure a line, each followed by what it counts:\n\n"
    "  entries          the listed entries\n"
    "  file_bytes       the file's size (ls -l, os.path.getsize): what a copy, upload or tar moves; the\n"
    "                   sum of the seven byte counts below\n"
    "  live_bytes       local headers, padding and data of the listed entries\n"
    "  dead_bytes       replaced or removed entries ('mmzip pack' reclaims them)\n"
    "  reserved_bytes   room kept after members that grow in place, such as HDF5 files (a hole on disk;\n"
    "                   'mmzip pack' reclaims it)\n"
    "  free_bytes       the slack between the last entry and the directory, where a writer puts its next\n"
    "                   entries (a hole on disk). While a writer has the archive open it may be large; the\n"
    "                   last writer's close removes it, leaving at most max(64 KiB, 1% of the file)\n"
    "  kept_bytes       below the data, left by directory relocations: the directory the last one moved\n"
    "                   away from, kept for readers still reading it, and holes later puts fill (within\n"
    "                   max(64 KiB, 1% of the file) with free_bytes once the last writer has closed)\n"
    "  directory_bytes  the central directory and end records\n"
    "  prefix_bytes     bytes before the archive (a self-extractor's stub)\n"
    "  zip64            whether the end records are ZIP64 ones (mmzip writes them for every non-empty archive)\n"
    "  min_alignment    the largest power of two dividing every stored entry's data offset\n"
    "  writer_lock      whether a writer holds the archive now\n"
    "  torn_tail, unnamed, unfinished_edits\n"
    "                   entries hidden or awaiting repair (a warning on standard error names each and says\n"
    "                   what 'mmzip recover' will do)\n",
    run};
