/* fitrun/shard.h — split a job file into N shards by input line, and name
 * the per-shard outputs. Pure functions. (Owner: launcher/shard/.) */
#ifndef FITRUN_SHARD_H
#define FITRUN_SHARD_H

#include <stdbool.h>
#include <stddef.h>

struct fr_shard {
    bool enabled;
    int index;   /* K, 0-based */
    int count;   /* N >= 1 */
};

/* "K/N" or "auto" (auto reads SLURM_ARRAY_TASK_ID/_MIN/_COUNT from envp).
 * Returns 0, or -1 with a message in err. */
int fr_shard_parse(const char *s, char *const *envp, struct fr_shard *out, char *err, size_t errlen);
/* Inside a SLURM array task with no --shard: fill *out and return 1; 0 if not in an array task. */
int fr_shard_from_env(char *const *envp, struct fr_shard *out);
/* Does input line `line` (1-based) belong to this shard? (line-1) mod N == K. */
bool fr_shard_selects(const struct fr_shard *s, long line);
/* Replace "{shard}" in pattern with K. Returns 0 or -1 (too long). */
int fr_shard_expand(const char *pattern, const struct fr_shard *s, char *buf, size_t n);

#endif
