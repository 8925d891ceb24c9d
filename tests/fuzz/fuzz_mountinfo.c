/* fuzz_mountinfo.c — /proc/self/mountinfo, which a hostile container can
 * shape (mount points with spaces, escapes, odd optional fields): every
 * line through fr_mountinfo_parse_line, the super options through
 * fr_opt_has / fr_opt_value, and the whole text through fr_mounts_scan,
 * which picks the cgroup mounts and /dev/shm. The input is the file.
 *
 * Invariants:
 *  - a line that parses has an absolute root and mount point, a non-empty
 *    file system type, and fields without a raw space;
 *  - its fields round-trip: escaped again (\040 \011 \012 \134) and put in
 *    a fresh line, they parse to the same strings;
 *  - "size=" found by fr_opt_value is an option fr_opt_has agrees on;
 *  - fr_mounts_scan chooses only absolute mount points and roots, keeps
 *    within FR_NOTES_MAX notes, each NUL-terminated. */
#include "../../launcher/detect/internal.h"
#include "fuzz.h"

/* The kernel's escaping of a mountinfo path field (fs/proc_namespace.c:
 * mangle() escapes space, tab, newline and backslash). */
static char *escape(const char *s)
{
    char *out = malloc(strlen(s) * 4 + 1), *w = out;
    if (!out)
        abort();
    for (; *s; s++) {
        if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\\')
            w += sprintf(w, "\\%03o", (unsigned char)*s);
        else
            *w++ = *s;
    }
    *w = '\0';
    return out;
}

static void check_opts(const char *opts)
{
    char v[64];
    if (!fr_opt_value(opts, "size", v, sizeof v))
        return;
    if (strlen(v) + 5 < sizeof v) {
        char opt[sizeof v + 8];
        snprintf(opt, sizeof opt, "size=%s", v);
        FUZZ_CHECK(fr_opt_has(opts, opt), "fr_opt_value found size=%s in '%s' but fr_opt_has does not", v, opts);
    }
}

static void check_line(const char *text, size_t len)
{
    char *line = fuzz_cstr((const uint8_t *)text, len);
    struct fr_mountinfo_entry e;
    const char *why = NULL;
    if (fr_mountinfo_parse_line(line, &e, &why) < 0) {
        FUZZ_CHECK(why && *why, "a refused line says why");
        free(line);
        return;
    }
    FUZZ_CHECK(e.root && e.mountpoint && e.fstype && e.source && e.super_opts, "every field is set");
    FUZZ_CHECK(e.root[0] == '/' && e.mountpoint[0] == '/', "root '%s', mount point '%s'", e.root, e.mountpoint);
    FUZZ_CHECK(e.fstype[0] && !strchr(e.fstype, ' ') && !strchr(e.super_opts, ' '), "fstype '%s', options '%s'",
               e.fstype, e.super_opts);
    check_opts(e.super_opts);

    char *root = escape(e.root), *mp = escape(e.mountpoint), *src = escape(e.source);
    size_t n = strlen(root) + strlen(mp) + strlen(e.fstype) + strlen(src) + strlen(e.super_opts) + 64;
    char *again = malloc(n);
    if (!again)
        abort();
    snprintf(again, n, "36 35 0:1 %s %s rw,relatime shared:7 - %s %s %s", root, mp, e.fstype, src, e.super_opts);
    struct fr_mountinfo_entry f;
    FUZZ_CHECK(fr_mountinfo_parse_line(again, &f, &why) == 0, "re-escaped line '%s' refused: %s", again, why);
    FUZZ_CHECK(!strcmp(f.root, e.root), "root '%s' came back as '%s'", e.root, f.root);
    FUZZ_CHECK(!strcmp(f.mountpoint, e.mountpoint), "mount point '%s' came back as '%s'", e.mountpoint, f.mountpoint);
    FUZZ_CHECK(!strcmp(f.fstype, e.fstype), "fstype '%s' came back as '%s'", e.fstype, f.fstype);
    FUZZ_CHECK(!strcmp(f.source, e.source), "source '%s' came back as '%s'", e.source, f.source);
    FUZZ_CHECK(!strcmp(f.super_opts, e.super_opts), "options '%s' came back as '%s'", e.super_opts, f.super_opts);
    free(again);
    free(root);
    free(mp);
    free(src);
    free(line);
}

static void check_scan(const char *text)
{
    struct fr_dx *x = calloc(1, sizeof *x);
    struct fr_resources *r = calloc(1, sizeof *r);
    char *copy = strdup(text);
    if (!x || !r || !copy)
        abort();
    x->sysroot = "/nonexistent";
    x->res = r;
    fr_mounts_scan(x, copy, "/proc/self/mountinfo");
    for (int c = 0; c < FR_CTL_COUNT; c++)
        if (x->v1m[c].found)
            FUZZ_CHECK(x->v1m[c].mountpoint[0] == '/' && x->v1m[c].root[0] == '/', "v1 %s mount '%s' root '%s'",
                       fr_ctl_names[c], x->v1m[c].mountpoint, x->v1m[c].root);
    if (x->v2m.found)
        FUZZ_CHECK(x->v2m.mountpoint[0] == '/' && x->v2m.root[0] == '/', "cgroup2 mount '%s' root '%s'",
                   x->v2m.mountpoint, x->v2m.root);
    FUZZ_CHECK(strlen(x->shm_size_opt) < sizeof x->shm_size_opt && strlen(x->shm_fstype) < sizeof x->shm_fstype,
               "/dev/shm fields fit");
    FUZZ_CHECK(r->nnotes >= 0 && r->nnotes <= FR_NOTES_MAX, "%d notes", r->nnotes);
    for (int i = 0; i < r->nnotes; i++)
        FUZZ_CHECK(memchr(r->notes[i], '\0', FR_NOTE_MAX), "note %d is terminated", i);
    free(copy);
    free(r);
    free(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256 * 1024)
        return 0;
    char *text = fuzz_cstr(data, size);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        check_line(p, len);
        p += len + (nl != NULL);
    }
    check_scan(text);
    free(text);
    return 0;
}
