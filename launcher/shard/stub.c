/* stub.c — placeholder until sharding lands (delete then). */
#include "fitrun/shard.h"
int fr_shard_parse(const char *s, char *const *envp, struct fr_shard *out, char *err, size_t errlen)
{ (void)s; (void)envp; (void)out; (void)err; (void)errlen; return -1; }
int fr_shard_from_env(char *const *envp, struct fr_shard *out) { (void)envp; (void)out; return 0; }
bool fr_shard_selects(const struct fr_shard *s, long line) { (void)s; (void)line; return true; }
int fr_shard_expand(const char *pattern, const struct fr_shard *s, char *buf, size_t n)
{ (void)pattern; (void)s; (void)buf; (void)n; return -1; }
