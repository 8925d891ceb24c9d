/* fuzz_proc_cgroup.c — /proc/self/cgroup ("ID:CONTROLLERS:/PATH" per line)
 * through fr_proc_cgroup_find, and each path it finds through
 * fr_cgroup_translate under the mount roots detection meets: a host mount
 * ("/"), a bind-mounted leaf (root == the path), a bind-mounted ancestor,
 * a root outside the cgroup namespace ("/.."), another line's path. The
 * input is the file.
 *
 * Invariants:
 *  - a path found is absolute, one line of the text (no newline), shorter
 *    than the buffer, and the same whether malformed lines are noted or not;
 *  - the v2 lookup and each controller's lookup find the first such line;
 *  - a translated directory is the mount point or below it: it starts with
 *    the mount point and never has a ".." component (no climbing out of the
 *    mount through a hostile path); "outside" gives the mount point itself. */
#include "../../launcher/detect/internal.h"
#include "fuzz.h"

static const char *const controllers[] = {NULL, "cpu", "cpuset", "memory", "pids", "cpuacct", "name=systemd"};
#define NCTL (sizeof controllers / sizeof controllers[0])

static bool has_dotdot(const char *p)
{
    for (const char *s = p; (s = strstr(s, "..")); s += 2)
        if ((s == p || s[-1] == '/') && (s[2] == '\0' || s[2] == '/'))
            return true;
    return false;
}

static size_t trimmed(const char *p)
{
    size_t l = strlen(p);
    while (l > 1 && p[l - 1] == '/')
        l--;
    return l == 1 && p[0] == '/' ? 0 : l;
}

static void check_translate(const char *mount, const char *root, const char *path)
{
    char out[FR_PATH];
    enum fr_translate t = fr_cgroup_translate(mount, root, path, out, sizeof out);
    size_t ml = trimmed(mount);
    if (t == FR_TR_TOOLONG)
        return;
    FUZZ_CHECK(t == FR_TR_OK || t == FR_TR_OUTSIDE, "translate returned %d", (int)t);
    FUZZ_CHECK(!strncmp(out, mount, ml), "'%s' under mount '%s' root '%s' became '%s', not below the mount", path,
               mount, root, out);
    FUZZ_CHECK(out[ml] == '\0' || out[ml] == '/' || ml == 0, "'%s' -> '%s' leaves mount '%s'", path, out, mount);
    FUZZ_CHECK(!has_dotdot(out + ml), "'%s' under mount '%s' root '%s' became '%s', which climbs out", path, mount,
               root, out);
    if (t == FR_TR_OUTSIDE)
        FUZZ_CHECK(strlen(out) == (ml ? ml : 1), "outside: '%s' is not the mount point '%s'", out, mount);
}

/* "/a/b" -> "/a"; "/a" -> "/". */
static void parent(const char *p, char *buf, size_t n)
{
    snprintf(buf, n, "%s", p);
    char *slash = strrchr(buf, '/');
    if (slash && slash != buf)
        *slash = '\0';
    else if (slash)
        buf[1] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *text = fuzz_cstr(data, size);
    struct fr_resources *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    struct fr_dx x = {.res = r, .sysroot = "/nonexistent"};
    char found[NCTL][FR_PATH];
    bool have[NCTL];
    for (size_t c = 0; c < NCTL; c++) {
        char quiet[FR_PATH], small[8];
        int a = fr_proc_cgroup_find(&x, text, controllers[c], found[c], sizeof found[c]);
        int b = fr_proc_cgroup_find(NULL, text, controllers[c], quiet, sizeof quiet);
        have[c] = a == 0;
        FUZZ_CHECK(a == b && (a < 0 || !strcmp(found[c], quiet)), "noting lines changes the answer");
        FUZZ_CHECK(a == 0 || a == -1, "returned %d", a);
        if (fr_proc_cgroup_find(NULL, text, controllers[c], small, sizeof small) == 0)
            FUZZ_CHECK(strlen(small) < sizeof small && a == 0, "a path that fits a small buffer fits a big one");
        if (a < 0)
            continue;
        const char *p = found[c];
        FUZZ_CHECK(p[0] == '/' && !strchr(p, '\n'), "found '%s'", p);
        FUZZ_CHECK(strstr(text, p), "'%s' is not in the text", p);
    }
    FUZZ_CHECK(r->nnotes <= FR_NOTES_MAX, "%d notes", r->nnotes);

    static const char *const mounts[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/cpu,cpuacct", "/", "/sys/fs/cgroup/"};
    for (size_t c = 0; c < NCTL; c++) {
        if (!have[c])
            continue;
        const char *p = found[c];
        char up[FR_PATH];
        parent(p, up, sizeof up);
        for (size_t m = 0; m < sizeof mounts / sizeof mounts[0]; m++) {
            check_translate(mounts[m], "/", p);
            check_translate(mounts[m], p, p);
            check_translate(mounts[m], up, p);
            check_translate(mounts[m], "/..", p);
            for (size_t d = 0; d < NCTL; d++)
                if (have[d])
                    check_translate(mounts[m], found[d], p);
        }
    }
    free(r);
    free(text);
    return 0;
}
