/* internal.h — shared by the files of launcher/shard/ only. */
#ifndef FITRUN_SHARD_INTERNAL_H
#define FITRUN_SHARD_INTERNAL_H

#include <stddef.h>

/* vsnprintf into err (when err and errlen are non-zero). */

#endif
