/* main.c - the mmzip command: dispatches to one subcommand per file (cmd_*.c). */
#include "cli.h"

#include <string.h>

static const command *const commands[] = {&cmd_ls, &cmd_cat, &cmd_put, &cmd_check, &cmd_recover,
                                          &cmd_pack, &cmd_info, &cmd_run};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f, "usage: mmzip COMMAND [ARGS...]\n\n"
               "A memory-mapped, append-only, crash-safe ZIP store for array data.\n\n"
               "Commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-8s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(f, "\nRun 'mmzip COMMAND --help' for the options of a command, 'man mmzip' for the manual,\n"
               "'mmzip --version' for the version.\n"
               "Exit status: 0 success, 1 failure, 2 usage error, 3 archive locked by another writer.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        if (argc > 2)
            for (size_t i = 0; i < N_COMMANDS; i++)
                if (strcmp(argv[2], commands[i]->name) == 0) {
                    fputs(commands[i]->usage, stdout);
                    return EXIT_OK;
                }
        usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("mmzip %s\n", mmzip_version());
        return EXIT_OK;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], commands[i]->name) == 0) {
            int code;
            if (commands[i]->run != cmd_run.run && cli_wants_help(commands[i], argc - 1, argv + 1, &code))
                return code;
            return commands[i]->run(argc - 1, argv + 1);
        }
    fprintf(stderr, "mmzip: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
