/* cgroup_path.c — where is this process's cgroup, and what is above it?
 *
 * /proc/self/cgroup has one line per hierarchy, "ID:CONTROLLERS:PATH":
 *   4:cpu,cpuacct:/docker/1f2e...   v1, several controllers on one hierarchy
 *   1:name=systemd:/user.slice      v1 named hierarchy (no controller)
 *   0::/system.slice/x.service      v2 (ID 0, empty list)
 * PATH is relative to the process's cgroup-namespace root and may itself
 * contain ':' (only the first two colons separate fields).
 *
 * The mount's root field (mountinfo field 4) is the cgroup the mount shows
 * at its mount point, in the same namespace-relative terms. So the
 * directory of our cgroup is mountpoint + (PATH relative to root):
 *   root "/"              host mount, or a namespace's own mount
 *   root == PATH          the leaf itself is bind-mounted (Docker on v1)
 *   root "/a", PATH "/a/b" a bind-mounted subtree
 *   root "/..", "/../x"   the mount starts above our namespace root: the
 *                         names between are unknowable, so fall back to the
 *                         mount point and say so (as OpenJDK does).
 * When the translated directory does not exist (a leaf bind-mounted at the
 * root under another name), we fall back to the mount point too. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"
#include "internal.h"

static bool list_has(const char *list, size_t len, const char *name)
{
    size_t nl = strlen(name);
    const char *p = list, *end = list + len;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t l = comma ? (size_t)(comma - p) : (size_t)(end - p);
        if (l == nl && !strncmp(p, name, nl))
            return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

static bool all_digits(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

int fr_proc_cgroup_find(struct fr_dx *x, const char *text, const char *controller, char *out, size_t n)
{
    int found = -1, lineno = 0;
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *next = nl ? nl + 1 : NULL;
        lineno++;
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (len == 0) {
            line = next;
            continue;
        }
        if (!c2 || !all_digits(line, (size_t)(c1 - line)) || c2 + 1 >= line + len || c2[1] != '/') {
            if (x)
                fr_detect_note(x->res, "/proc/self/cgroup line %d: not 'ID:CONTROLLERS:/PATH': ignored", lineno);
            line = next;
            continue;
        }
        size_t listlen = (size_t)(c2 - c1 - 1);
        bool match =
            controller ? list_has(c1 + 1, listlen, controller) : (listlen == 0 && c1 - line == 1 && line[0] == '0');
        if (match && found < 0) {
            size_t plen = len - (size_t)(c2 + 1 - line);
            if (plen >= n) {
                if (x)
                    fr_detect_note(x->res, "/proc/self/cgroup line %d: path too long: ignored", lineno);
            } else {
                memcpy(out, c2 + 1, plen);
                out[plen] = '\0';
                found = 0;
            }
        }
        line = next;
    }
    return found;
}

int fr_proc_cgroup_path(const char *text, const char *controller, char *out, size_t n)
{
    return fr_proc_cgroup_find(NULL, text, controller, out, n);
}

/* Does the path have a ".." component? */
static bool has_dotdot(const char *p)
{
    for (const char *s = p; (s = strstr(s, "..")); s += 2)
        if ((s == p || s[-1] == '/') && (s[2] == '\0' || s[2] == '/'))
            return true;
    return false;
}

/* Length of p without trailing slashes (but "/" stays 1). */
static size_t trimmed_len(const char *p)
{
    size_t l = strlen(p);
    while (l > 1 && p[l - 1] == '/')
        l--;
    return l;
}

static enum fr_translate join(const char *mountpoint, const char *rel, size_t rellen, char *out, size_t n)
{
    size_t ml = trimmed_len(mountpoint);
    if (ml == 1 && mountpoint[0] == '/')
        ml = 0; /* mounted at "/": the relative part is the whole path */
    if (rellen == 0 && ml == 0) {
        rel = "/";
        rellen = 1;
    }
    int r = snprintf(out, n, "%.*s%.*s", (int)ml, mountpoint, (int)rellen, rel);
    return r < 0 || (size_t)r >= n ? FR_TR_TOOLONG : FR_TR_OK;
}

enum fr_translate fr_cgroup_translate(const char *mountpoint, const char *root, const char *cgpath, char *out, size_t n)
{
    size_t rl = trimmed_len(root), pl = trimmed_len(cgpath);
    bool root_is_slash = rl == 1 && root[0] == '/';
    if (has_dotdot(root) || has_dotdot(cgpath) || root[0] != '/' || cgpath[0] != '/') {
        enum fr_translate t = join(mountpoint, "", 0, out, n);
        return t == FR_TR_OK ? FR_TR_OUTSIDE : t;
    }
    if (root_is_slash)
        return join(mountpoint, cgpath, pl == 1 ? 0 : pl, out, n);
    if (pl == rl && !strncmp(cgpath, root, rl))
        return join(mountpoint, "", 0, out, n);
    if (pl > rl && !strncmp(cgpath, root, rl) && cgpath[rl] == '/')
        return join(mountpoint, cgpath + rl, pl - rl, out, n);
    enum fr_translate t = join(mountpoint, "", 0, out, n);
    return t == FR_TR_OK ? FR_TR_OUTSIDE : t;
}

/* Is the controller listed in MOUNT/cgroup.controllers? A missing file
 * (old kernels, some fixtures) counts as yes. */
static bool v2_controller_enabled(struct fr_dx *x, const char *mount, const char *name)
{
    char path[FR_PATH];
    fr_dir_file(path, sizeof path, mount, "cgroup.controllers");
    char *text = fr_dx_read(x, path, FR_SMALL_FILE);
    if (!text)
        return true;
    bool found = false;
    for (char *save = NULL, *tok = strtok_r(text, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save))
        if (!strcmp(tok, name))
            found = true;
    if (!found)
        fr_detect_note(x->res, "%s: no '%s' controller in this cgroup2 hierarchy: no %s limits apply", path, name,
                       name);
    free(text);
    return found;
}

/* Choose the mount for controller c: a v1 hierarchy carrying it, else the
 * cgroup2 mount. Returns the mount or NULL. */
static const struct fr_dx_mount *pick_mount(struct fr_dx *x, int c)
{
    if (x->v1m[c].found) {
        x->loc[c].version = 1;
        return &x->v1m[c];
    }
    if (x->v2m.found && v2_controller_enabled(x, x->v2m.mountpoint, fr_ctl_names[c])) {
        x->loc[c].version = 2;
        return &x->v2m;
    }
    return NULL;
}

/* The own directory of a hierarchy mounted as m, for the controller `name`
 * (its /proc/self/cgroup line: the v1 line naming it, or the v2 "0::"
 * line). loc->own says whether the directory found is this process's own
 * cgroup; when it is not (no line, a path that cannot be translated or is
 * not visible) the mount point is read instead, with a note unless quiet. */
static void locate_in(struct fr_dx *x, const struct fr_dx_mount *m, const char *name, const char *text, bool quiet,
                      struct fr_dx_loc *loc)
{
    fr_copy(loc->mount, sizeof loc->mount, m->mountpoint);
    loc->own = false;
    char cgpath[FR_PATH];
    if (!text || fr_proc_cgroup_find(NULL, text, loc->version == 1 ? name : NULL, cgpath, sizeof cgpath) < 0) {
        if (text && !quiet)
            fr_detect_note(x->res, "/proc/self/cgroup: no %s line for %s: reading the mount root %s",
                           loc->version == 1 ? "v1" : "'0::'", name, m->mountpoint);
        fr_copy(loc->dir, sizeof loc->dir, m->mountpoint);
        return;
    }
    enum fr_translate t = fr_cgroup_translate(m->mountpoint, m->root, cgpath, loc->dir, sizeof loc->dir);
    if (t == FR_TR_TOOLONG) {
        if (!quiet)
            fr_detect_note(x->res, "%s: cgroup path %s too long: reading the mount root %s", name, cgpath,
                           m->mountpoint);
        fr_copy(loc->dir, sizeof loc->dir, m->mountpoint);
    } else if (t == FR_TR_OUTSIDE) {
        /* No controller name: on v2 all four share the mount, one note says it. */
        if (!quiet)
            fr_detect_note(x->res,
                           "cgroup %s is not below the mount root %s of %s (cgroup namespace): reading %s itself",
                           cgpath, m->root, m->mountpoint, m->mountpoint);
    } else if (!fr_dx_is_dir(x, loc->dir)) {
        if (!quiet)
            fr_detect_note(
                x->res,
                "cgroup directory %s not visible (cgroup namespace or bind-mounted leaf): reading the mount root %s",
                loc->dir, m->mountpoint);
        fr_copy(loc->dir, sizeof loc->dir, m->mountpoint);
    } else {
        loc->own = true;
    }
}

static void locate_one(struct fr_dx *x, int c, const char *text)
{
    const struct fr_dx_mount *m = pick_mount(x, c);
    if (m)
        locate_in(x, m, fr_ctl_names[c], text, false, &x->loc[c]);
}

/* cpuacct: no limit is read from it, but fitrun's own cgroups account a
 * job's CPU time there (v1 only: on v2 every cgroup has cpu.stat). */
static void locate_cpuacct(struct fr_dx *x, const char *text)
{
    struct fr_cgroup_loc *out = &x->res->cgroup_cpuacct;
    if (!x->v1acct.found)
        return;
    struct fr_dx_loc *loc = calloc(1, sizeof *loc); /* two paths of FR_PATH: off the stack */
    if (!loc)
        return;
    loc->version = 1;
    locate_in(x, &x->v1acct, "cpuacct", text, true, loc);
    if (strlen(loc->dir) < sizeof out->dir && strlen(loc->mount) < sizeof out->mount) {
        out->version = 1;
        out->own = loc->own;
        fr_copy(out->mount, sizeof out->mount, loc->mount);
        fr_copy(out->dir, sizeof out->dir, loc->dir);
    }
    free(loc);
}

void fr_cgroups_locate(struct fr_dx *x, const char *text)
{
    struct fr_resources *r = x->res;
    char cgpath[FR_PATH];
    /* One pass with notes for malformed lines; the lookups below are quiet. */
    if (text)
        (void)fr_proc_cgroup_find(x, text, NULL, cgpath, sizeof cgpath);
    char missing[64] = "";
    bool any_v1 = false, any_v2 = false;
    for (int c = 0; c < FR_CTL_COUNT; c++) {
        locate_one(x, c, text);
        struct fr_dx_loc *loc = &x->loc[c];
        r->cgroup[c].version = loc->version;
        if (!loc->version) {
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s", missing[0] ? ", " : "",
                     fr_ctl_names[c]);
            continue;
        }
        any_v1 |= loc->version == 1;
        any_v2 |= loc->version == 2;
        if (strlen(loc->mount) >= FR_SOURCE_MAX || strlen(loc->dir) >= FR_SOURCE_MAX)
            fr_detect_note(r, "%s: cgroup path longer than %d bytes: truncated in the report", fr_ctl_names[c],
                           FR_SOURCE_MAX - 1);
        fr_copy(r->cgroup[c].mount, sizeof r->cgroup[c].mount, loc->mount);
        fr_copy(r->cgroup[c].dir, sizeof r->cgroup[c].dir, loc->dir);
        /* A truncated path is not the directory any more. */
        r->cgroup[c].own = loc->own && strlen(loc->dir) < FR_SOURCE_MAX;
    }
    locate_cpuacct(x, text);
    if (missing[0])
        fr_detect_note(r, "no cgroup hierarchy for %s in /proc/self/mountinfo: no limits from there", missing);
    r->cgroup_version = any_v1 ? 1 : any_v2 ? 2 : 0;
    r->cgroup_hybrid = any_v1 && x->v2m.found;
}

/* "/a/b" -> "/a", "/a" -> "/"; false for "/". */
static bool parent_dir(char *dir)
{
    char *slash = strrchr(dir, '/');
    if (!slash || (slash == dir && dir[1] == '\0'))
        return false;
    if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    return true;
}

int fr_cgroup_walk(struct fr_dx *x, enum fr_controller ctl, fr_level_visit visit, void *arg)
{
    const struct fr_dx_loc *loc = &x->loc[ctl];
    if (!loc->version)
        return 0;
    char dir[FR_PATH];
    fr_copy(dir, sizeof dir, loc->dir);
    size_t ml = strlen(loc->mount);
    int levels = 0;
    for (bool own = true;; own = false) {
        visit(x, dir, own, arg);
        levels++;
        /* Stop at the mount point: above it the hierarchy is not ours to see. */
        if (strlen(dir) <= ml || !parent_dir(dir) || strlen(dir) < ml)
            break;
    }
    return levels;
}

bool fr_dx_note_missing(const struct fr_dx *x, enum fr_controller ctl, const char *dir, bool own)
{
    return own && strcmp(dir, x->loc[ctl].mount) != 0;
}

struct walk_min {
    fr_level_reader fn;
    struct fr_value *out;
};

static void visit_min(struct fr_dx *x, const char *dir, bool own, void *arg)
{
    struct walk_min *w = arg;
    double v = 0;
    char src[FR_SOURCE_MAX];
    /* Ties keep the deepest level: it is the one the user configured last. */
    if (w->fn(x, dir, own, &v, src, sizeof src) == FR_LVL_LIMIT && (!w->out->known || v < w->out->value))
        fr_value_set(w->out, v, "%s", src);
}

int fr_cgroup_walk_min(struct fr_dx *x, enum fr_controller ctl, fr_level_reader fn, struct fr_value *out)
{
    struct walk_min w = {fn, out};
    return fr_cgroup_walk(x, ctl, visit_min, &w);
}

int fr_parse_limit_u64(const char *s, bool allow_minus1, uint64_t *v)
{
    char buf[64];
    /* Any number, "max" or "-1" with its blanks fits: longer text is
     * garbage, never cut to fit ("5" and 60 blanks and "junk" is not 5). */
    if (!s || strlen(s) >= sizeof buf)
        return -1;
    fr_copy(buf, sizeof buf, s);
    char *t = fr_trim(buf);
    if (!strcmp(t, "max") || (allow_minus1 && !strcmp(t, "-1")))
        return 0;
    /* The kernel's values are signed 64-bit (v1's "no limit" is 2^63 - 4096),
     * and they are reported as such through a double: 2^63 and up is garbage. */
    if (fr_parse_u64(t, v) < 0 || (double)*v >= 0x1p63)
        return -1;
    return 1;
}

/* Quote a file's content for a note: first line, printable, bounded. */
static const char *quote(const char *s, char *buf, size_t n)
{
    return fr_term_text(s, strcspn(s, "\n"), buf, n); /* the first line, control characters shown */
}

enum fr_level fr_cgroup_read_u64(struct fr_dx *x, const char *dir, const char *name, bool allow_minus1,
                                 bool note_missing, uint64_t *v, char *src, size_t n)
{
    char path[FR_PATH];
    fr_dir_file(path, sizeof path, dir, name);
    char *text = fr_dx_read_noted(x, path, FR_SMALL_FILE, !note_missing, name);
    if (!text)
        return FR_LVL_SKIP;
    int r = fr_parse_limit_u64(text, allow_minus1, v);
    if (r < 0) {
        char q[48];
        fr_detect_note(x->res, "%s: garbage '%s': ignored", path, quote(text, q, sizeof q));
        free(text);
        return FR_LVL_SKIP;
    }
    free(text);
    fr_copy(src, n, path);
    return r == 1 ? FR_LVL_LIMIT : FR_LVL_NONE;
}
