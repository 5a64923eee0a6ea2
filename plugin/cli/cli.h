/* cli.h - shared by the mmzip subcommands. */
#ifndef MMZIP_CLI_H
#define MMZIP_CLI_H

#include "mmzip.h"

#include <stdio.h>

/* Exit codes, the same for every subcommand (documented in mmzip(1)). */
enum {
    EXIT_OK = 0,
    EXIT_FAIL = 1,       /* the operation failed: missing entry, problems found, I/O error, not a ZIP */
    EXIT_USAGE = 2,      /* bad command line */
    EXIT_BUSY = 3        /* another writer holds the archive */
};

typedef struct command {
    const char *name;
    const char *summary;
    const char *usage;   /* full --help text */
    int (*run)(int argc, char **argv);
} command;

extern const command cmd_ls, cmd_cat, cmd_put, cmd_check, cmd_recover, cmd_pack, cmd_info, cmd_run;

/* Prints "mmzip CMD: <message>" for a failed library call and returns the matching exit code. */
int cli_fail(const char *cmd, int status);
/*
 * 0 if name is the archive file as written by mmzip_split_name's rule (create: the command creates it if
 * missing); otherwise prints why (the name is ambiguous, naming both readings, or names a member of
 * another archive, which no subcommand takes) and returns EXIT_FAIL. Nothing is opened or created.
 */
int cli_archive_name(const char *cmd, const char *name, int create);
/* True if argv[i] is -h or --help. Prints the command's help to stdout and sets *exit_code. */
int cli_wants_help(const command *c, int argc, char **argv, int *exit_code);
int cli_usage(const command *c, const char *why);
/* cli_usage for an option the command does not know, naming it. */
int cli_unknown_option(const command *c, const char *option);
/* Parses the N of --align N (a power of two from 1 to the page size, in decimal) into *align: 0, or, for
 * anything else, the usage error's exit status (2) after saying why. */
int cli_parse_align(const command *c, const char *text, uint32_t *align);
/* Prints on stderr one "mmzip CMD: warning:" line per entry of h with an unfinished in-place edit
 * (mmzip_unfinished_edits): which entry, what is left, and what 'mmzip recover ARCHIVE' will do. Returns how
 * many were found. */
int cli_warn_unfinished(const char *cmd, mmzip_t *h, const char *archive);
/* Prints to standard error, as "mmzip CMD: warning: ...", each field of the archive's records that mmzip reads
 * past as zipfile does (mmzip_warnings). */
void cli_warn_fields(const char *cmd, mmzip_t *h);
/* Human-readable byte count ("1.5 MiB"). */
const char *cli_bytes(unsigned long long n, char *buf, size_t len);
/* Progress on stderr, only when stderr is a terminal and the command has run for about a second
 * ($MMZIP_PROGRESS_DELAY seconds); a line that overwrites itself, cleared by cli_progress_done. */
void cli_progress_start(void);
/* "mmzip CMD: TEXT (P%)"; fraction < 0 for no percentage. */
void cli_progress_line(const char *cmd, const char *text, double fraction);
void cli_progress_bytes(const char *cmd, unsigned long long done, unsigned long long total);
void cli_progress_done(void);

#endif
