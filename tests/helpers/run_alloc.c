/* run_alloc.c — test helper: allocate (and touch) MiB megabytes, as a job
 * that needs more memory than its limit. Under RLIMIT_AS malloc fails and
 * the helper says so the usual way ("Cannot allocate memory", exit 1), which
 * `fitrun run` reports as status `memory`; under a memory cgroup the OOM
 * killer ends it (`memory`, OOMKill).
 *   run_alloc MiB */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    long mib = argc > 1 ? atol(argv[1]) : 1024;
    char *p = malloc((size_t)mib << 20);
    if (!p) {
        fprintf(stderr, "run_alloc: %ld MiB: %s\n", mib, strerror(ENOMEM));
        return 1;
    }
    /* Every page written through a volatile pointer: a malloc + memset +
     * free that the compiler may drop would touch nothing, and a memory
     * cgroup (which counts what is touched) would never see it. */
    volatile char *v = p;
    for (size_t off = 0; off < ((size_t)mib << 20); off += 4096)
        v[off] = 1;
    printf("allocated %ld MiB\n", mib);
    free(p);
    return 0;
}
