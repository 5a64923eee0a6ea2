/* cmd_check.c - mmzip check: verify structure and every CRC, say which readers can read the archive, and
 * what recover would change. */
#include "cli.h"

#include <string.h>

#define N_READERS 4
static const char *const reader_names[N_READERS] = {"zipfile", "unzip", "7-Zip", "libzip"};

typedef struct {
    int quiet;
    unsigned errors, interop;
    unsigned untagged;            /* interop: lines without a {objects: ...} tag: effect on readers unknown */
    char objection[N_READERS][200]; /* per reader, its worst objection, the first of its kind: "refuses it
                                     * (why)" or "warns (why)" */
} tally;

/* Reads the tag " {objects: R verb, R verb: why}" or " {objects: none}" that ends an interop line. */
static void tally_objections(tally *t, const char *msg) {
    const char *tag = strstr(msg, " {objects: ");
    if (!tag) {
        t->untagged++;
        return;
    }
    tag += strlen(" {objects: ");
    if (strncmp(tag, "none}", 5) == 0) return;
    const char *colon = strstr(tag, ": ");
    const char *why = colon ? colon + 2 : "";
    size_t why_len = strcspn(why, "}");
    for (const char *p = tag; p && (!colon || p < colon);) {
        for (int i = 0; i < N_READERS; i++) {
            size_t n = strlen(reader_names[i]);
            if (strncmp(p, reader_names[i], n) != 0 || p[n] != ' ') continue;
            int warns = strncmp(p + n + 1, "warns", 5) == 0;
            /* The worst objection wins: a refusal replaces a warning found before it. */
            if (t->objection[i][0] && (warns || strncmp(t->objection[i], "refuses", 7) == 0)) continue;
            snprintf(t->objection[i], sizeof t->objection[i], "%s (%.*s)", warns ? "warns" : "refuses it",
                     (int)(why_len < 150 ? why_len : 150), why);
        }
        p = strstr(p, ", ");
        if (p) p += 2;
    }
}

static void report(const char *msg, void *ctx) {
    tally *t = ctx;
    cli_progress_done(); /* a finding gets a line of its own, not the end of the progress line */
    if (strncmp(msg, "error: ", 7) == 0) {
        t->errors++;
        if (strstr(msg, " {objects: ")) tally_objections(t, msg);
        fprintf(stderr, "%s\n", msg);
    } else if (strncmp(msg, "interop: ", 9) == 0) {
        tally_objections(t, msg);
        if (!t->quiet) fprintf(stderr, "%s\n", msg);
    } else if (!t->quiet) {
        fprintf(stderr, "%s\n", msg);
    }
}

static void progress(uint64_t done, uint64_t total, void *ctx) {
    (void)ctx;
    cli_progress_bytes("check", done, total);
}

static int run(int argc, char **argv) {
    tally t;
    memset(&t, 0, sizeof t);
    const char *archive = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) t.quiet = 1;
        else if (argv[i][0] == '-') return cli_unknown_option(&cmd_check, argv[i]);
        else if (!archive) archive = argv[i];
        else return cli_usage(&cmd_check, "too many arguments");
    }
    if (!archive) return cli_usage(&cmd_check, "missing ARCHIVE");
    if (cli_archive_name("check", archive, 0)) return EXIT_FAIL;
    mmzip_t *h;
    mmzip_options o;
    mmzip_options_init(&o);
    o.progress = progress;
    int st = mmzip_open(archive, "r", &o, &h);
    if (st) {
        /* The verdict lines still come, so that a script reading them does not take silence for a yes. */
        int rc = cli_fail("check", st);
        if (!t.quiet) {
            printf("%s: valid for mmzip: no\n", archive);
            printf("%s: valid for every ZIP reader: not known (mmzip cannot open it: see its message)\n", archive);
        }
        return rc;
    }
    cli_progress_start();
    st = mmzip_check(h, report, &t);
    cli_progress_done();
    size_t n = mmzip_count(h);
    mmzip_close(h);
    /* Who objects, by the tags of the interop: and error: lines: "yes", or "no: 7-Zip warns (why); libzip
     * refuses it (why)", and whether mmzip cannot read it all either. A finding whose effect on them is not
     * known sends the reader to the lines. */
    char verdict[1200];
    size_t vo = 0;
    for (int i = 0; i < N_READERS; i++) {
        if (!t.objection[i][0]) continue;
        vo += (size_t)snprintf(verdict + vo, sizeof verdict - vo, "%s%s %s", vo ? "; " : "no: ", reader_names[i],
                               t.objection[i]);
        if (vo >= sizeof verdict) vo = sizeof verdict - 1;
    }
    if (st || t.untagged)
        snprintf(verdict + vo, sizeof verdict - vo, "%s%s", vo ? "; " : "no: ",
                 st ? "mmzip cannot read it all either (see the error: lines)" : "see the interop: lines");
    else if (!vo)
        snprintf(verdict, sizeof verdict, "yes");
    t.interop = strcmp(verdict, "yes") != 0;
    if (!t.quiet) {
        printf("%s: valid for mmzip: %s\n", archive, st ? "no" : "yes");
        printf("%s: valid for every ZIP reader: %s\n", archive, verdict);
    }
    if (st) return cli_fail("check", st);
    if (!t.quiet)
        printf("%s: OK, %zu entr%s, every local header and CRC-32 verified%s\n", archive, n, n == 1 ? "y" : "ies",
               t.interop ? " (valid for mmzip, not for every ZIP reader)" : "");
    return EXIT_OK;
}

const command cmd_check = {
    "check", "verify the structure and every CRC-32; say who can read it and what recover would change",
    "usage: mmzip check [-q] ARCHIVE\n\n"
    "Verifies ARCHIVE without changing it: the end records and central directory, every local header\n"
    "against the directory, and every entry's CRC-32 (compressed entries are decoded). Standard error gets\n"
    "one line per finding, by kind:\n"
    "  error:    something mmzip cannot read (a wrong CRC-32, a missing local header, an unknown method);\n"
    "  interop:  something mmzip reads but some other ZIP reader refuses or reads differently (end records\n"
    "            not right after the directory, bytes after them, a 16-bit entry count that wrapped, names\n"
    "            that cannot be looked up, duplicate names, methods unzip lacks...);\n"
    "  recover:  what 'mmzip recover' (or any writable open, such as 'mmzip put') would do to the file, as a\n"
    "            dry run, naming the entry concerned: write an undo journal back (an in-place edit whose\n"
    "            writer was killed), keep an entry modified in place and recompute its CRC, cut an\n"
    "            interrupted mmzip write, move the directory back, or keep a foreign anomaly and append\n"
    "            after it; 'recover: nothing to do' when it would change nothing. Every error: that\n"
    "            recovery fixes says so and has its recover: line.\n"
    "Each interop: line ends with the readers mmzip is tested against that object to it, and how:\n"
    "  {objects: 7-Zip warns, libzip refuses it: WHY}, or {objects: none}.\n"
    "Standard output then says whether the archive is valid for mmzip (no error:) and for every ZIP reader:\n"
    "  valid for every ZIP reader: yes                 none of Python zipfile, Info-ZIP unzip, 7-Zip and libzip\n"
    "                                                  objects (refuses it, or warns);\n"
    "  valid for every ZIP reader: no: R1 refuses it (WHY); R2 warns (WHY)\n"
    "                                                  the readers that do, each with its first reason;\n"
    "  valid for every ZIP reader: no: R1 refuses it (WHY); mmzip cannot read it all either (see the error:\n"
    "                                                  lines), where mmzip finds an error: too (error: lines\n"
    "                                                  carry the same tag as interop: lines);\n"
    "  valid for every ZIP reader: no: see the interop: lines\n"
    "                                                  a finding whose effect on those readers is not known;\n"
    "  valid for every ZIP reader: not known (mmzip cannot open it: see its message)\n"
    "                                                  when mmzip cannot open the archive at all (the message\n"
    "                                                  names the field it refuses)\n"
    "Exit status 0 if mmzip can read every entry, 1 if any error was found.\n\n"
    "  -q, --quiet  print only the error: lines\n",
    run};
