/* fitrun/cli.h — the subcommands. Each lives in launcher/cli/cmd_<name>.c,
 * parses its own options and returns the process exit status. */
#ifndef FITRUN_CLI_H
#define FITRUN_CLI_H

int fr_cmd_detect(int argc, char **argv); /* fitrun detect [--json] [--sysroot DIR] [--cpus N] ... */
int fr_cmd_wrap(int argc, char **argv);   /* fitrun [options] -- CMD [ARGS...] (entrypoint / wrapper) */
int fr_cmd_run(int argc, char **argv);    /* fitrun run [--profile F] [--jobs F] [--out F] ... */
int fr_cmd_merge(int argc, char **argv);  /* fitrun merge --jobs J RESULTS... */
int fr_cmd_submit(int argc, char **argv); /* fitrun submit slurm|condor ... */

#endif
