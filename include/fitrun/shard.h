/* fitrun/shard.h — split a job file into N shards by input line, and name
 * the per-shard outputs (launcher/jobs/shard.c). Pure functions.
 *
 * Line numbers are physical, 1-based line numbers of the jobs file (blank
 * and invalid lines count), so that `fitrun run --shard K/N` (the pool)
 * and `fitrun merge` (fitrun/scaleout.h) agree on which shard a job
 * belongs to without talking. */
#ifndef FITRUN_SHARD_H
#define FITRUN_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct fr_shard {
    bool enabled;
    int index; /* K, 0-based */
    int count; /* N >= 1 */
};

/* Environment variable that pins N for `--shard auto`. The job scripts of
 * `fitrun submit slurm` export it, because a rerun of one array index
 * (`sbatch --array=2 script`) is a new array whose SLURM_ARRAY_TASK_MIN/
 * _COUNT say "1 task starting at 2". With it set, K = SLURM_ARRAY_TASK_ID. */
#define FR_SHARD_COUNT_ENV "FITRUN_SHARD_COUNT"

/* The most shards a run can be cut into. Shard numbers then have at most
 * nine digits, which is what fr_shard_from_filename reads back, and they
 * fit an int. */
#define FR_SHARD_COUNT_MAX 1000000000L

/* "K/N" or "auto" (auto reads SLURM_ARRAY_TASK_ID/_MIN/_COUNT from envp).
 * Returns 0, or -1 with a message in err. */
int fr_shard_parse(const char *s, char *const *envp, struct fr_shard *out, char *err, size_t errlen);
/* Does input line `line` (1-based) belong to this shard? (line-1) mod N == K;
 * every line does when s is NULL or not enabled. */
bool fr_shard_selects(const struct fr_shard *s, long line);
/* Replace "{shard}" in pattern with K. Returns 0 or -1 (too long). */
int fr_shard_expand(const char *pattern, const struct fr_shard *s, char *buf, size_t n);

/* Inside a SLURM array task with no --shard: 1 = in an array task, *out
 * filled; 0 = not in an array task (no SLURM_ARRAY_TASK_ID); -1 = in an
 * array task whose variables are missing, not numbers or describe a
 * non-contiguous array (`--array=1,3,7`), message in err. */
int fr_shard_auto(char *const *envp, struct fr_shard *out, char *err, size_t errlen);
/* The shard (0-based) of 1-based input line `line` among `count` shards. */
int fr_shard_of_line(long line, int count);
/* "results.3.jsonl" -> 3: the K of a per-shard file named "<anything>.K.<ext>"
 * (the pattern `{shard}` produces). Looks at the base name only. Returns K,
 * or -1 when the name carries no shard number. */
int fr_shard_from_filename(const char *path);

#endif
