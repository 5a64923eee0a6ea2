/* cmd_ls.c - mmzip ls: list entries with their method, sizes, data offset, alignment and CRC. */
#include "cli.h"

#include <string.h>

typedef struct {
    int names_only;
    unsigned long long count;
} ls_ctx;

static int print_entry(const mmzip_entry_info *e, void *p) {
    ls_ctx *c = p;
    c->count++;
    if (c->names_only) {
        printf("%.*s\n", (int)e->name_len, e->name);
        return 0;
    }
    char m[24];
    if (strcmp(mmzip_method_name(e->method), "unknown") == 0) snprintf(m, sizeof m, "method%u", e->method);
    else snprintf(m, sizeof m, "%s", mmzip_method_name(e->method));
    printf("%-9s %14llu %14llu %14llu %6u %08x  %.*s\n", m, (unsigned long long)e->size,
           (unsigned long long)e->compressed_size, (unsigned long long)e->data_offset, e->alignment, e->crc32,
           (int)e->name_len, e->name);
    return 0;
}

static int run(int argc, char **argv) {
    ls_ctx c = {0, 0};
    const char *archive = NULL, *prefix = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-1") == 0 || strcmp(argv[i], "--names") == 0) c.names_only = 1;
        else if (argv[i][0] == '-' && argv[i][1]) return cli_unknown_option(&cmd_ls, argv[i]);
        else if (!archive) archive = argv[i];
        else if (!prefix) prefix = argv[i];
        else return cli_usage(&cmd_ls, "too many arguments");
    }
    if (!archive) return cli_usage(&cmd_ls, "missing ARCHIVE");
    if (cli_archive_name("ls", archive, 0)) return EXIT_FAIL;
    mmzip_t *h;
    int st = mmzip_open(archive, "r", NULL, &h);
    if (st) return cli_fail("ls", st);
    if (!c.names_only)
        printf("%-9s %14s %14s %14s %6s %8s  %s\n", "method", "size", "compressed", "data_offset", "align",
               "crc32", "name");
    st = mmzip_list_ex(h, prefix, 0, print_entry, &c);
    mmzip_info info;
    if (mmzip_get_info(h, &info) == MMZIP_OK && info.torn_tail)
        fprintf(stderr, "mmzip ls: warning: %s: %llu entr%s at the end of the directory %s no local header that "
                "agrees with it (an interrupted writer, or damage) and %s not listed; mmzip keeps %s as found (not "
                "its to roll back): 'mmzip check %s' names %s\n", archive,
                (unsigned long long)info.torn_tail, info.torn_tail == 1 ? "y" : "ies",
                info.torn_tail == 1 ? "has" : "have", info.torn_tail == 1 ? "it is" : "they are",
                info.torn_tail == 1 ? "it" : "them", archive, info.torn_tail == 1 ? "it" : "them");
    cli_warn_fields("ls", h);
    cli_warn_unfinished("ls", h, archive);
    mmzip_close(h);
    if (st) return cli_fail("ls", st);
    return EXIT_OK;
}

const command cmd_ls = {
    "ls", "list entries with method, sizes, data offset, alignment and CRC",
    "usage: mmzip ls [-1] ARCHIVE [PREFIX]\n\n"
    "Lists the entries of ARCHIVE, sorted by name, or only those whose names start with PREFIX.\n"
    "Columns: method, size, compressed size, data offset, alignment of the data offset (largest power\n"
    "of two dividing it, up to 32768), CRC-32, name. The archive is opened read-only and not repaired:\n"
    "an entry whose in-place edit was interrupted by a killed writer is listed with its last committed\n"
    "size and CRC (or, for an entry modified in place through a writable view, its stale CRC), and a\n"
    "warning on standard error names\n"
    "it and says what 'mmzip recover ARCHIVE' will do. A field of the archive's records that is wrong\n"
    "but read past as Python zipfile reads it (an entry count that is not the directory's, a local header\n"
    "whose method disagrees, a stored entry recorded longer than its size, the last entry comment running\n"
    "past the directory) gets a warning on standard error naming it.\n\n"
    "  -1, --names   print only the names, one per line\n"
    "  -h, --help    show this help\n",
    run};
