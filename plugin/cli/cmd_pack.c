/* cmd_pack.c - mmzip pack: rewrite an archive without dead space. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void progress(uint64_t done, uint64_t total, void *ctx) {
    (void)ctx;
    cli_progress_bytes("pack", done, total);
}

static int run(int argc, char **argv) {
    uint32_t align = 0;
    const char *pos[2] = {0};
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "--align") == 0 && i + 1 < argc) || strncmp(argv[i], "--align=", 8) == 0) {
            int bad = cli_parse_align(&cmd_pack, argv[i][7] == '=' ? argv[i] + 8 : argv[++i], &align);
            if (bad) return bad;
        }
        else if (argv[i][0] == '-') return cli_unknown_option(&cmd_pack, argv[i]);
        else if (npos < 2) pos[npos++] = argv[i];
        else return cli_usage(&cmd_pack, "too many arguments");
    }
    if (npos < 1) return cli_usage(&cmd_pack, "missing ARCHIVE");
    if (cli_archive_name("pack", pos[0], 0) || (pos[1] && cli_archive_name("pack", pos[1], 1))) return EXIT_FAIL;
    struct stat before, after;
    if (stat(pos[0], &before) != 0) before.st_size = 0;
    mmzip_options o;
    mmzip_options_init(&o);
    if (align) o.alignment = align;
    o.progress = progress;
    cli_progress_start();
    int st = mmzip_pack(pos[0], pos[1], &o);
    cli_progress_done();
    if (st) return cli_fail("pack", st);
    const char *out = pos[1] ? pos[1] : pos[0];
    if (stat(out, &after) != 0) after.st_size = 0;
    char a[32], b[32];
    printf("%s: packed into %s: %s -> %s\n", pos[0], out, cli_bytes((unsigned long long)before.st_size, a, sizeof a),
           cli_bytes((unsigned long long)after.st_size, b, sizeof b));
    return EXIT_OK;
}

const command cmd_pack = {
    "pack", "rewrite an archive without the space of replaced entries",
    "usage: mmzip pack [--align N] ARCHIVE [OUT]\n\n"
    "Copies the live entries of ARCHIVE into a new, compact archive: stored entries re-aligned,\n"
    "compressed ones byte for byte, dead space (replaced and removed entries) dropped. Without OUT,\n"
    "the new archive is fsynced and renamed over ARCHIVE, so a crash leaves either the old or the new\n"
    "archive, whole. The writer lock is held throughout (exit status 3 if another writer has it).\n\n"
    "  --align N   data alignment of stored entries (default 64)\n",
    run};
