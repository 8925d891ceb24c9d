/* internal.h — shared by the files of launcher/env/ only. */
#ifndef FITRUN_ENV_INTERNAL_H
#define FITRUN_ENV_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/* joblib's memmap folder: a path, exported only when /dev/shm is small. */
#define FR_ENV_JOBLIB_VAR "JOBLIB_TEMP_FOLDER"

/* Is NAME (its first len bytes) one of the thread-count variables
 * fitrun exports (OMP_NUM_THREADS ... PYTHON_CPU_COUNT)? export.c owns
 * the list. */
bool fr_env_is_thread_var(const char *name, size_t len);

#endif
