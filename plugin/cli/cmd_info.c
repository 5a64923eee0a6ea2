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
    mmzip_close(h);
    if (st) return cli_fail("info", st);
    char b[32];
    printf("archive:          %s\n", argv[1]);
    printf("entries:          %llu\n", (unsigned long long)i.entries);
    printf("file_bytes:       %llu (%s)\n", (unsigned long long)i.file_size, cli_bytes(i.file_size, b, sizeof b));
    printf("live_bytes:       %llu\n", (unsigned long long)i.live_bytes);
    printf("dead_bytes:       %llu\n", (unsigned long long)i.dead_bytes);
    printf("reserved_bytes:   %llu%s\n", (unsigned long long)i.reserved_bytes,
           i.reserved_bytes ? " (room kept after entries that grow in place; a hole on disk)" : "");
    printf("free_bytes:       %llu\n", (unsigned long long)i.free_bytes);
    printf("directory_bytes:  %llu\n", (unsigned long long)i.directory_bytes);
    printf("prefix_bytes:     %llu\n", (unsigned long long)i.prefix_bytes);
    printf("zip64:            %s\n", i.zip64 ? "yes" : "no");
    printf("min_alignment:    %u\n", i.min_alignment);
    printf("torn_tail:        %llu%s\n", (unsigned long long)i.torn_tail,
           i.torn_tail ? " (entries hidden: local header missing or disagreeing; kept, not mmzip's to drop)" : "");
    printf("unnamed:          %llu%s\n", (unsigned long long)i.unnamed,
           i.unnamed ? " (entries with an empty or NUL-holding name: not listed, kept)" : "");
    printf("writer_lock:      %s\n", !i.locks_supported ? "unsupported by this file system"
                                     : i.writer_locked ? "held (a writer has the archive open)"
                                                       : "free");
    return EXIT_OK;
}

const command cmd_info = {
    "info", "show entries, live and dead bytes, alignment and the writer lock",
    "usage: mmzip info ARCHIVE\n\n"
    "Prints the number of entries, the bytes on disk split into live entries, dead space (replaced or\n"
    "removed entries, which 'mmzip pack' reclaims), reserved room (kept after members edited in place,\n"
    "such as HDF5 files, for them to grow into without moving; a hole on disk, which 'mmzip pack' also\n"
    "reclaims), free slack before the directory, directory and prefix, the smallest alignment of any\n"
    "stored entry's data, and whether a writer currently holds the archive.\n",
    run};
