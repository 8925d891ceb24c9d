/* memhog.c — an exec job that allocates memory in 4 MiB steps until
 * allocation fails, then says so on stderr the way C programs do
 * ("Cannot allocate memory") and exits 1. Built static by the container and
 * VM tests (cc -static), so that the very same binary runs on the host, in
 * every container shape and in the busybox-only cgroup v2 VM.
 * Under exec.ini's 64 MiB RLIMIT_AS it must end as `memory` everywhere,
 * long before any container or VM memory limit matters. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEP (4u << 20)
#define MAX_STEPS 1024 /* 4 GiB: stop even without any limit */

int main(void)
{
    size_t n;
    for (n = 0; n < MAX_STEPS; n++) {
        char *p = malloc(STEP);
        if (!p) {
            fprintf(stderr, "memhog: malloc after %zu MiB: %s\n", n * (STEP >> 20), strerror(ENOMEM));
            return 1;
        }
        /* Touch one byte only: RLIMIT_AS counts address space, and touching
         * every page costs seconds of CPU time in the emulated v2 VM (page
         * faults under TCG), which would turn this into a CPU timeout there. */
        p[0] = (char)n;
    }
    fprintf(stderr, "memhog: allocated %zu MiB without a failure\n", n * (STEP >> 20));
    return 0;
}
