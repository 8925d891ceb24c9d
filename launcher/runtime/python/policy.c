/* policy.c — the sandbox policy the zygote builds: the profile's spec (the
 * one map, fitrun/sandbox_keys.h) with the runtime's own CPU backstop and
 * one per-slot uid per worker, packed into a sealed memfd the interpreter
 * reads once (fr_policy_spec_pack; fitrun_runtime.py builds it with
 * fr_policy_build_packed, adding its own tree to what predictions read). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "fitrun/sandbox_keys.h"
#include "internal.h"

/* The profile's spec (the one map, fitrun/sandbox_keys.h) as the zygote
 * builds it: RLIMIT_CPU is the backstop (fr_cpu_backstop_ms), since fitrun
 * kills at the budget itself; no RLIMIT_AS where the prediction's cgroup
 * limits memory; one per-slot uid per worker. Under isolation = reuse one
 * process runs many predictions: RLIMIT_CPU counts all of them
 * (PY_REUSE_CPU_MS more, the process is replaced before it gets there),
 * and recvmsg is allowed so that the process can take each job's pipe ends
 * from its worker. Packed into a sealed memfd the interpreter reads (its
 * descriptor, O_CLOEXEC), or -1 with err. */
int py_policy_memfd(const struct fr_profile *p, int nslots, unsigned cg_ctls, char *err, size_t errlen)
{
    struct fr_policy_spec spec;
    fr_profile_policy_spec(p, &spec);
    fr_cgroup_policy_spec(cg_ctls, &spec);
    spec.cpu_ms = fr_cpu_backstop_ms(p->cpu_time_ms);
    const char *allow[FR_PROFILE_MAX_NAMES + 2];
    if (p->reuse) {
        size_t n = 0;
        for (const char *const *a = spec.allow; a && *a && n < FR_PROFILE_MAX_NAMES; a++)
            allow[n++] = *a;
        allow[n++] = "recvmsg";
        allow[n] = NULL;
        spec.allow = allow;
        if (spec.cpu_ms)
            spec.cpu_ms += PY_REUSE_CPU_MS;
    }
    spec.slots = nslots > 0 ? nslots : 1;
    long len = fr_policy_spec_pack(&spec, NULL, 0);
    void *buf = len > 0 ? malloc((size_t)len) : NULL;
    if (!buf || fr_policy_spec_pack(&spec, buf, (size_t)len) != len) {
        snprintf(err, errlen, "packing the sandbox policy for the interpreter: %s", strerror(len < 0 ? errno : ENOMEM));
        free(buf);
        return -1;
    }
    int fd = memfd_create("fitrun-policy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ssize_t w = fd < 0 ? -1 : 0;
    for (size_t done = 0; fd >= 0 && done < (size_t)len; done += (size_t)w) {
        w = write(fd, (char *)buf + done, (size_t)len - done);
        if (w < 0 && errno == EINTR)
            w = 0;
        else if (w <= 0)
            break;
    }
    int e = errno;
    free(buf);
    if (fd < 0 || w < 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0) {
        if (fd >= 0)
            e = errno ? errno : e;
        snprintf(err, errlen, "a memfd for the sandbox policy: %s", strerror(e));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}
