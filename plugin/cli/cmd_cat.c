/* cmd_cat.c - mmzip cat: write one entry's bytes to standard output. */
#include "cli.h"

#include <errno.h>
#include <unistd.h>

static int run(int argc, char **argv) {
    if (argc != 3) return cli_usage(&cmd_cat, argc < 3 ? "missing ARCHIVE or KEY" : "too many arguments");
    if (cli_archive_name("cat", argv[1], 0)) return EXIT_FAIL;
    mmzip_t *h;
    mmzip_options o;
    mmzip_options_init(&o);
    o.flags |= MMZIP_VERIFY_CRC; /* nothing is written out before the whole entry's CRC-32 is known good */
    int st = mmzip_open(argv[1], "r", &o, &h);
    if (st) return cli_fail("cat", st);
    cli_warn_fields("cat", h);
    const void *data;
    uint64_t size;
    st = mmzip_get(h, argv[2], &data, &size);
    if (st) {
        /* The entry cannot be read intact (EBUSY here means a member awaiting recovery, not another
         * writer: a reader takes no writer lock), so status 1, as the usage says. */
        cli_fail("cat", st);
        mmzip_close(h);
        return EXIT_FAIL;
    }
    /* Straight from the mapping to the pipe: no intermediate copy. */
    const char *p = data;
    while (size) {
        ssize_t w = write(1, p, size > (1u << 30) ? (1u << 30) : (size_t)size);
        if (w < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "mmzip cat: write to standard output failed\n");
            mmzip_close(h);
            return EXIT_FAIL;
        }
        p += w;
        size -= (uint64_t)w;
    }
    mmzip_close(h);
    return EXIT_OK;
}

const command cmd_cat = {
    "cat", "write an entry's bytes to standard output",
    "usage: mmzip cat ARCHIVE KEY\n\n"
    "Writes the bytes of entry KEY to standard output, decoded if compressed (deflate, bzip2, LZMA, zstd,\n"
    "xz). The CRC-32 is checked first, for stored entries too: on a mismatch nothing is written and the\n"
    "error names the entry. Exit status 1 if there is no such entry or it cannot be read intact.\n\n"
    "  -h, --help    show this help\n",
    run};
