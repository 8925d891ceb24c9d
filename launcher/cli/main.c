/* main.c — dispatch to a subcommand, or wrap a command.
 *
 *   fitrun detect ...            what may this process use, and why
 *   fitrun run ...               a sandboxed prediction pool (JSONL in, JSONL out)
 *   fitrun merge ...             merge shard results, check completeness
 *   fitrun submit slurm|condor   print (or submit) a batch-array script
 *   fitrun [options] -- CMD ...  entrypoint / wrapper: export thread counts, act as init
 *
 * Anything that is not a subcommand name is handed to the wrapper, so
 * `fitrun --init -- cmd` and `fitrun -- cmd` work as tini users expect. */
#include <stdio.h>
#include <string.h>

#include "fitrun/cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
} commands[] = {
    {"detect", fr_cmd_detect},
    {"run", fr_cmd_run},
    {"merge", fr_cmd_merge},
    {"submit", fr_cmd_submit},
};

static void usage(FILE *f)
{
    fputs("usage: fitrun detect [--json] [--sysroot DIR] [--profile FILE] [--cpus N]\n"
          "                     [--rounding floor|ceil|nearest] [--memory-per-worker SIZE] [--workers N]\n"
          "       fitrun run [--profile FILE] [--jobs FILE|-] [--out FILE|-] [--workers N] [--resume]\n"
          "       fitrun merge --jobs FILE [--shards N] [--quiet] RESULTS...\n"
          "       fitrun submit slurm|condor --profile FILE --jobs FILE --shards N --cpus-per-task C ...\n"
          "       fitrun [--init] [--explain] [--quiet] [--profile FILE] -- CMD [ARGS...]\n"
          "       fitrun --version | --help\n"
          "Run `fitrun COMMAND --help` for the options of one command, and\n"
          "`fitrun --init --help` for the wrapper's (entrypoint) options; see README.md\n"
          "and fitrun(1).\n",
          f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 125;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("fitrun %s\n", FITRUN_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    return fr_cmd_wrap(argc, argv);
}
