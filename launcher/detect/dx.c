/* dx.c — what every step of a detection run uses: files read under the
 * sysroot, notes on what was ignored, values with their source. The steps
 * (mountinfo.c, cgroup_path.c, cpu.c, memory.c, pids.c, shm.c,
 * scheduler.c) call these; detect.c orders the steps. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fitrun/common.h"
#include "internal.h"

void fr_copy(char *dst, size_t n, const char *src)
{
    if (n == 0)
        return;
    snprintf(dst, n, "%s", src);
}

void fr_value_set(struct fr_value *v, double value, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->source, sizeof v->source, fmt, ap);
    va_end(ap);
    v->known = true;
    v->value = value;
}

void fr_detect_note(struct fr_resources *r, const char *fmt, ...)
{
    if (r->nnotes >= FR_NOTES_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->notes[r->nnotes], FR_NOTE_MAX, fmt, ap);
    va_end(ap);
    /* The same problem seen twice (e.g. by two walks) is one note. */
    for (int i = 0; i < r->nnotes; i++)
        if (!strcmp(r->notes[i], r->notes[r->nnotes]))
            return;
    r->nnotes++;
}

char *fr_dx_read(const struct fr_dx *x, const char *path, size_t max)
{
    char full[FR_PATH];
    if (!fr_path_join(full, sizeof full, x->sysroot, path))
        return NULL;
    return fr_read_file(full, max, NULL);
}

char *fr_dx_read_noted(struct fr_dx *x, const char *path, size_t max, bool quiet_missing, const char *what)
{
    char *text = fr_dx_read(x, path, max);
    if (!text && !(quiet_missing && errno == ENOENT))
        fr_detect_note(x->res, "%s: %s: %s: ignored", what, path, fr_read_strerror(errno));
    return text;
}

bool fr_dx_is_dir(const struct fr_dx *x, const char *path)
{
    char full[FR_PATH];
    struct stat st;
    return fr_path_join(full, sizeof full, x->sysroot, path) && stat(full, &st) == 0 && S_ISDIR(st.st_mode);
}
