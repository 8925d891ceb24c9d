/* internal.h — shared by the files of launcher/shard/ only. */
#ifndef FITRUN_SHARD_INTERNAL_H
#define FITRUN_SHARD_INTERNAL_H

#include <stddef.h>

/* vsnprintf into err (when err and errlen are non-zero). */
void shard_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
