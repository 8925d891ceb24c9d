/* policy_pack — a sandbox policy as the bytes the Python runtime's
 * interpreter builds it from, for tests and tools that play fitrun's side
 * (tests/python/drive_runtime.py, tests/corpus/run_python_corpus.py).
 *
 *   policy_pack TEXT > spec.bin
 *
 * TEXT is "key=value;..." (fitrun/sandbox_keys.h: a profile's [sandbox]
 * keys plus fs, slots and core). The spec is checked by building it once
 * here; exit 0 with the packed spec (fr_policy_spec_pack) on stdout, or 2
 * with the error. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "fitrun/sandbox.h"
#include "fitrun/sandbox_keys.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        fr_die(2, "usage: policy_pack 'preset=python;cpu_time=1s;...' > spec.bin");
    static struct fr_sandbox_text t;
    char err[1024];
    if (fr_sandbox_text_spec(argv[1], &t, err, sizeof err) < 0)
        fr_die(2, "policy_pack: %s", err);
    struct fr_policy *pol = NULL;
    if (fr_policy_build(&t.spec, &pol, err, sizeof err) < 0)
        fr_die(2, "policy_pack: %s", err);
    fr_policy_free(pol);
    long len = fr_policy_spec_pack(&t.spec, NULL, 0);
    char *buf = len > 0 ? malloc((size_t)len) : NULL;
    if (!buf || fr_policy_spec_pack(&t.spec, buf, (size_t)len) != len)
        fr_die_errno(2, "policy_pack: packing");
    for (long done = 0; done < len;) {
        ssize_t w = write(STDOUT_FILENO, buf + done, (size_t)(len - done));
        if (w <= 0)
            fr_die_errno(2, "policy_pack: writing stdout");
        done += w;
    }
    free(buf);
    fr_sandbox_text_free(&t);
    return 0;
}
