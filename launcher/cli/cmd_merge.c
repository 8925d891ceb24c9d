/* cmd_merge.c — `fitrun merge --jobs JOBS [--shards N] RESULTS...`:
 * merged results on stdout in input order, completeness on stderr and in
 * the exit status (see launcher/scaleout/merge.c). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "fitrun/cli.h"
#include "fitrun/scaleout.h"
#include "fitrun/common.h"
#include "internal.h"

static void merge_usage(FILE *f)
{
    fputs("usage: fitrun merge --jobs FILE [--shards N] [--quiet] RESULTS...\n"
          "Merge the per-shard result files of one job file: one result per valid job,\n"
          "in input order, on stdout. Missing jobs are listed on stderr with their shard\n"
          "and the exit status is 1; duplicate results are dropped (the first complete\n"
          "one wins); torn and garbage lines are reported with file:line and skipped.\n"
          "  -j, --jobs FILE     the job file the shards were cut from (- = stdin)\n"
          "  -n, --shards N      how many shards there were; default: inferred from result\n"
          "                      files named <name>.K.jsonl (results.{shard}.jsonl), and said\n"
          "  -q, --quiet         no summary line\n"
          "  -h, --help          this help\n"
          "Exit status: 0 complete, 1 some job has no result, 125 usage or I/O error.\n",
          f);
}

int fr_cmd_merge(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"jobs", required_argument, NULL, 'j'},
        {"shards", required_argument, NULL, 'n'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct fr_merge_opts o = {0};
    int64_t v;
    int c;
    optind = 0; /* GNU: full re-initialisation, so the command can be run twice in one process */
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":j:n:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': o.jobs = optarg; break;
        case 'n':
            if (fr_parse_i64(optarg, &v) < 0 || v < 1 || v > FR_SHARD_COUNT_MAX) {
                fr_warn("merge: --shards '%s': expected a whole number from 1 to %ld", optarg, FR_SHARD_COUNT_MAX);
                return FR_EXIT_USAGE;
            }
            o.shards = (int)v;
            break;
        case 'q': fr_quiet = true; break;
        case 'h': merge_usage(stdout); return 0;
        default: return fr_cli_getopt_error("merge", c, argv);
        }
    }
    if (!o.jobs || optind >= argc) {
        fr_warn("merge: %s", !o.jobs ? "--jobs FILE is required" : "no result files given");
        merge_usage(stderr);
        return FR_EXIT_USAGE;
    }
    o.results = (const char *const *)(argv + optind);
    o.nresults = argc - optind;
    return fr_merge(&o, stdout);
}
