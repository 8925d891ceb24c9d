/* startup.c — what the start-up is said to be: the one-line report with
 * its timings, a warning when it was slow (naming a network filesystem,
 * the usual cause), and `fitrun detect --profile`'s description of it
 * (fr_python_probe). */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

/* Network filesystems are the usual reason a start-up is slow. */
static const char *fs_name(const char *path)
{
    struct statfs sf;
    if (!*path || statfs(path, &sf) < 0)
        return NULL;
    switch ((unsigned long)sf.f_type) {
    case 0x6969UL: return "NFS";
    case 0xFF534D42UL: return "CIFS";
    case 0xFE534D42UL: return "SMB2";
    case 0x517BUL: return "SMB";
    case 0x0BD00BD0UL: return "Lustre";
    case 0x47504653UL: return "GPFS";
    case 0x00C36400UL: return "CephFS";
    case 0x65735546UL: return "FUSE";
    case 0x01021997UL: return "9p";
    case 0x5346414FUL: return "AFS";
    case 0x013111A8UL: return "IBRIX";
    case 0x19830326UL: return "BeeGFS";
    default: return NULL;
    }
}

/* The warning for a slow start-up (> PY_SLOW_START_MS), or "" when it was
 * not slow. Names the filesystem when it is a network one: the usual cause,
 * and the cure (a local copy) is the same for the interpreter and prelude. */
static void startup_warning(const char *interpreter, const char *prelude, double prelude_ms, uint64_t total_ms,
                            char *buf, size_t n)
{
    buf[0] = '\0';
    if (total_ms <= PY_SLOW_START_MS)
        return;
    const char *fs = fs_name(interpreter), *pfs = fs_name(prelude);
    char where[PATH_MAX + 64] = "";
    if (fs || pfs)
        snprintf(where, sizeof where, "%s is on %s; ", fs ? interpreter : prelude, fs ? fs : pfs);
    bool in_prelude = prelude_ms > total_ms / 2.0;
    snprintf(buf, n,
             "python start-up took %.1f s%s: %scopy the interpreter (or venv) and the packages it "
             "imports to a local disk if they are on a network filesystem",
             total_ms / 1000.0, in_prelude ? ", most of it importing the prelude's modules" : "", where);
}

void py_report_startup(const struct pyrt *py, json_t *ready, int nslots, uint64_t total_ms)
{
    json_t *v;
    double boot = json_is_number(v = json_object_get(ready, "boot_ms")) ? json_number_value(v) : -1;
    double prelude = json_number_value(json_object_get(ready, "prelude_ms"));
    const char *version = json_string_value(json_object_get(ready, "python"));
    fr_info("python: %s %s started once with %d worker%s in %.2f s (interpreter %.2f s, prelude %.2f s)",
            py->interpreter, version ? version : "", nslots, nslots == 1 ? "" : "s", total_ms / 1000.0,
            boot >= 0 ? boot / 1000.0 : 0.0, prelude / 1000.0);
    char warning[PATH_MAX + 512];
    json_t *pre = json_object_get(ready, "prelude");
    startup_warning(py->interpreter, json_is_string(pre) ? json_string_value(pre) : "", prelude, total_ms, warning,
                    sizeof warning);
    if (warning[0])
        fr_warn("%s", warning);
}

static json_t *or_null(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return v ? v : json_null();
}

/* For `fitrun detect --profile`: the same start-up as `fitrun run` (sandbox
 * self-test included, no worker), described as a JSON object. Declared in
 * include/fitrun/runtime.h. */
json_t *fr_python_probe(const struct fr_profile *p, const char *self_exe, char *err, size_t errlen)
{
    extern char **environ;
    struct pyrt py = {.ctl = -1, .nslots = 1};
    struct fr_runtime_config cfg = {.profile = p, .envp = environ, .output_cap = p->output, .self_exe = self_exe};
    uint64_t t0 = fr_now_ns();
    json_t *out = NULL, *ready = py_zygote_start(&py, &cfg, err, errlen);
    if (ready) {
        uint64_t total_ms = (fr_now_ns() - t0) / 1000000;
        char warning[PATH_MAX + 512];
        startup_warning(py.interpreter, p->prelude, json_number_value(json_object_get(ready, "prelude_ms")), total_ms,
                        warning, sizeof warning);
        out = json_pack("{s:s, s:O, s:I, s:O, s:O, s:O, s:o}", "interpreter", py.interpreter, "python",
                        or_null(ready, "python"), "total_ms", (json_int_t)total_ms, "boot_ms",
                        or_null(ready, "boot_ms"), "prelude_ms", or_null(ready, "prelude_ms"), "selftest_ms",
                        or_null(ready, "selftest_ms"), "warning", warning[0] ? json_string(warning) : json_null());
        if (!out)
            snprintf(err, errlen, "out of memory");
    }
    json_decref(ready);
    if (py.ctl >= 0)
        close(py.ctl);
    py_zygote_end(&py);
    return out;
}
