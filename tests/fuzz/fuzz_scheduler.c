/* fuzz_scheduler.c — what a batch scheduler says was allocated: the
 * environment (SLURM_CPUS_PER_TASK, SLURM_JOB_CPUS_PER_NODE with
 * SLURM_NODEID, NSLOTS, PBS_NP, NCPUS, LSB_DJOB_NUMPROC,
 * SLURM_MEM_PER_NODE) and the HTCondor machine ad. The input is the
 * environment, one NAME=value per line, then a NUL, then the machine ad;
 * a non-empty ad is handed over as _CONDOR_MACHINE_AD (an in-memory file),
 * and a _CONDOR_MACHINE_AD line of the input is dropped so the harness
 * reads nothing else.
 *
 * Invariants:
 *  - SLURM_JOB_CPUS_PER_NODE gives every node index up to the list's end a
 *    count >= 1, and none after it (no gaps);
 *  - a ClassAd number is finite and >= 0;
 *  - fr_detect_scheduler's CPUs are finite and above 0; its memory is
 *    finite, above 0 and a size fitrun can hold (at most FR_SIZE_MAX, the
 *    largest size fitrun accepts anywhere), so the report and the pool plan
 *    can use it as an integer;
 *  - every note is terminated, and there are at most FR_NOTES_MAX. */
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../launcher/detect/internal.h"
#include "fitrun/common.h"
#include "fuzz.h"

#define MAX_VARS 64

static int ad_fd = -1;
static char ad_var[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    ad_fd = memfd_create("fuzz-machine-ad", MFD_CLOEXEC);
    if (ad_fd < 0) {
        perror("memfd_create");
        abort();
    }
    snprintf(ad_var, sizeof ad_var, "_CONDOR_MACHINE_AD=/proc/self/fd/%d", ad_fd);
    return 0;
}

static void check_slurm_list(const char *list)
{
    long prev = 1;
    for (long i = 0; i < 40; i++) {
        long c = fr_parse_slurm_cpus_per_node(list, i);
        FUZZ_CHECK(c == -1 || c >= 1, "'%s' node %ld -> %ld", list, i, c);
        FUZZ_CHECK(!(prev == -1 && c >= 1), "'%s': node %ld has no entry but node %ld has %ld", list, i - 1, i, c);
        prev = c;
    }
    FUZZ_CHECK(fr_parse_slurm_cpus_per_node(list, -1) == -1, "a negative node index has no entry");
}

static void check_ad(const char *ad)
{
    static const char *const names[] = {"Cpus", "Memory", "TotalCpus", "Name"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        double v = -1;
        int r = fr_parse_classad_number(ad, names[i], &v);
        FUZZ_CHECK(r >= -1 && r <= 1, "classad returned %d", r);
        if (r == 1)
            FUZZ_CHECK(isfinite(v) && v >= 0, "%s = %g", names[i], v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *env, *ad;
    fuzz_split(data, size, &env, &ad);

    char *envp[MAX_VARS + 2];
    int n = 0;
    for (char *save = NULL, *line = strtok_r(env, "\n", &save); line && n < MAX_VARS;
         line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "_CONDOR_MACHINE_AD=", 19))
            continue;
        envp[n++] = line;
        const char *eq = strchr(line, '=');
        if (eq && !strncmp(line, "SLURM_JOB_CPUS_PER_NODE=", 24))
            check_slurm_list(eq + 1);
    }
    if (ad[0]) {
        size_t len = strlen(ad);
        if (ftruncate(ad_fd, 0) < 0 || pwrite(ad_fd, ad, len, 0) != (ssize_t)len)
            abort();
        envp[n++] = ad_var;
    }
    envp[n] = NULL;
    check_ad(ad);

    struct fr_resources *r = calloc(1, sizeof *r);
    struct fr_dx *x = calloc(1, sizeof *x);
    if (!r || !x)
        abort();
    x->sysroot = "/";
    x->envp = envp;
    x->res = r;
    fr_detect_scheduler(x);
    if (r->cpu_scheduler.known)
        FUZZ_CHECK(isfinite(r->cpu_scheduler.value) && r->cpu_scheduler.value > 0, "scheduler CPUs %g from %s",
                   r->cpu_scheduler.value, r->cpu_scheduler.source);
    if (r->mem_scheduler.known)
        FUZZ_CHECK(isfinite(r->mem_scheduler.value) && r->mem_scheduler.value > 0 &&
                       r->mem_scheduler.value <= (double)FR_SIZE_MAX,
                   "scheduler memory %g bytes from %s", r->mem_scheduler.value, r->mem_scheduler.source);
    FUZZ_CHECK(r->nnotes >= 0 && r->nnotes <= FR_NOTES_MAX, "%d notes", r->nnotes);
    for (int i = 0; i < r->nnotes; i++)
        FUZZ_CHECK(memchr(r->notes[i], '\0', FR_NOTE_MAX), "note %d is terminated", i);
    free(x);
    free(r);
    free(env);
    free(ad);
    return 0;
}
