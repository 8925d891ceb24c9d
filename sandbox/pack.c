/* pack.c — a policy spec as one byte string, and a policy built from one.
 *
 * fitrun maps a profile to a spec once (fitrun/sandbox_keys.h); the warm
 * Python interpreter, which must hold the policy itself (its children
 * apply it), gets that spec packed, through ctypes, instead of a second
 * mapping of the profile to text and a parser here.
 *
 * Layout (native byte order and sizes: both ends are on one machine and
 * link this same file):
 *
 *   "FRS1"  u32 total length
 *   u32 preset, u32 fs, u32 uid_base, i32 slots
 *   u64 cpu_ms, as_bytes, fsize_bytes, nofile, nproc, stack_bytes, core_bytes
 *   u8 spec_allow, require_landlock, slot_identity, 0
 *   5 lists (allow, deny, keep_caps, read_paths, write_paths):
 *       u32 count, then count NUL-terminated strings
 *
 * Unpacking checks every length and terminator and the enums' ranges, and
 * refuses trailing bytes; fr_policy_build checks the values as for any
 * spec. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"
#include "internal.h"

#define PACK_MAGIC "FRS1"
#define PACK_LIST_MAX 65535u
#define PACK_NLISTS 5

/* ---- writing ------------------------------------------------------------ */

struct writer {
    unsigned char *buf;
    size_t len, used; /* used may exceed len: only the length is wanted then */
};

static void put(struct writer *w, const void *p, size_t n)
{
    if (w->used <= w->len && n <= w->len - w->used)
        memcpy(w->buf + w->used, p, n);
    w->used += n;
}

static void put_u32(struct writer *w, uint32_t v)
{
    put(w, &v, sizeof v);
}

static void put_u64(struct writer *w, uint64_t v)
{
    put(w, &v, sizeof v);
}

static int put_list(struct writer *w, const char *const *list)
{
    uint32_t n = 0;
    while (list && list[n])
        if (++n > PACK_LIST_MAX)
            return -1;
    put_u32(w, n);
    for (uint32_t i = 0; i < n; i++)
        put(w, list[i], strlen(list[i]) + 1);
    return 0;
}

static const char *const *spec_list(const struct fr_policy_spec *s, int i)
{
    const char *const *lists[PACK_NLISTS] = {s->allow, s->deny, s->keep_caps, s->read_paths, s->write_paths};
    return lists[i];
}

long fr_policy_spec_pack(const struct fr_policy_spec *spec, void *buf, size_t len)
{
    if (!spec) {
        errno = EINVAL;
        return -1;
    }
    struct writer w = {buf, buf ? len : 0, 0};
    put(&w, PACK_MAGIC, 4);
    put_u32(&w, 0); /* the total, patched below */
    put_u32(&w, (uint32_t)spec->preset);
    put_u32(&w, (uint32_t)spec->fs);
    put_u32(&w, spec->uid_base);
    put_u32(&w, (uint32_t)spec->slots);
    const uint64_t limits[] = {spec->cpu_ms, spec->as_bytes,    spec->fsize_bytes, spec->nofile,
                               spec->nproc,  spec->stack_bytes, spec->core_bytes};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
        put_u64(&w, limits[i]);
    const unsigned char flags[4] = {spec->spec_allow, spec->require_landlock, spec->slot_identity, 0};
    put(&w, flags, sizeof flags);
    for (int i = 0; i < PACK_NLISTS; i++)
        if (put_list(&w, spec_list(spec, i)) < 0) {
            errno = EINVAL;
            return -1;
        }
    if (w.used > 0x7fffffffu) {
        errno = EINVAL;
        return -1;
    }
    uint32_t total = (uint32_t)w.used;
    if (total <= w.len)
        memcpy(w.buf + 4, &total, sizeof total);
    return (long)total;
}

/* ---- reading ------------------------------------------------------------ */

struct reader {
    const unsigned char *p, *end;
    const char *what; /* the first problem, or NULL */
};

static void get(struct reader *r, void *out, size_t n)
{
    if (r->what || (size_t)(r->end - r->p) < n) {
        r->what = r->what ? r->what : "truncated";
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->p, n);
    r->p += n;
}

static uint32_t get_u32(struct reader *r)
{
    uint32_t v;
    get(r, &v, sizeof v);
    return v;
}

static uint64_t get_u64(struct reader *r)
{
    uint64_t v;
    get(r, &v, sizeof v);
    return v;
}

/* A list: pointers into the reader's bytes, NULL-terminated, with room
 * for `extra` more entries; NULL when empty and extra is 0. */
static const char **get_list(struct reader *r, size_t extra)
{
    uint32_t n = get_u32(r);
    if (r->what)
        return NULL;
    if (n > PACK_LIST_MAX || n > (size_t)(r->end - r->p)) { /* each name takes a byte at least */
        r->what = "a list is longer than the bytes that hold it";
        return NULL;
    }
    if (!n && !extra)
        return NULL;
    const char **list = calloc((size_t)n + extra + 1, sizeof *list);
    if (!list) {
        r->what = "out of memory";
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        const unsigned char *nul = memchr(r->p, '\0', (size_t)(r->end - r->p));
        if (!nul) {
            r->what = "a name is not terminated";
            free(list);
            return NULL;
        }
        list[i] = (const char *)r->p;
        r->p = nul + 1;
    }
    return list;
}

static size_t count(const char *const *list)
{
    size_t n = 0;
    while (list && list[n])
        n++;
    return n;
}

static void unpack_scalars(struct reader *r, struct fr_policy_spec *s)
{
    uint32_t preset = get_u32(r), fs = get_u32(r);
    s->uid_base = get_u32(r);
    s->slots = (int)get_u32(r);
    s->cpu_ms = get_u64(r);
    s->as_bytes = get_u64(r);
    s->fsize_bytes = get_u64(r);
    s->nofile = get_u64(r);
    s->nproc = get_u64(r);
    s->stack_bytes = get_u64(r);
    s->core_bytes = get_u64(r);
    unsigned char flags[4];
    get(r, flags, sizeof flags);
    s->spec_allow = flags[0] != 0;
    s->require_landlock = flags[1] != 0;
    s->slot_identity = flags[2] != 0;
    if (!r->what && (preset > FR_PRESET_PYTHON || fs > FR_FS_SYSTEM || flags[0] > 1 || flags[1] > 1 || flags[2] > 1 ||
                     flags[3] != 0 || s->slots < 0))
        r->what = "a value out of range";
    s->preset = (enum fr_preset)preset;
    s->fs = (enum fr_fs_base)fs;
}

int fr_policy_build_packed(const void *packed, size_t len, const char *const *more_read, struct fr_policy **out,
                           char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    struct reader r = {packed, (const unsigned char *)packed + (packed ? len : 0), NULL};
    char magic[4];
    get(&r, magic, sizeof magic);
    uint32_t total = get_u32(&r);
    if (!r.what && memcmp(magic, PACK_MAGIC, 4))
        r.what = "not a packed spec of this version of the library";
    else if (!r.what && total != len)
        r.what = "its length does not match";
    struct fr_policy_spec spec;
    memset(&spec, 0, sizeof spec);
    unpack_scalars(&r, &spec);
    const char **lists[PACK_NLISTS] = {NULL};
    for (int i = 0; i < PACK_NLISTS && !r.what; i++)
        lists[i] = get_list(&r, i == 3 ? count(more_read) : 0);
    if (!r.what && r.p != r.end)
        r.what = "bytes after the last list";
    int rc = -1;
    if (r.what) {
        fr_seterr(err, errlen, "sandbox: packed spec: %s", r.what);
    } else {
        if (more_read && more_read[0]) {
            size_t n = count(lists[3]);
            for (size_t i = 0; more_read[i]; i++)
                lists[3][n + i] = more_read[i];
        }
        spec.allow = lists[0];
        spec.deny = lists[1];
        spec.keep_caps = lists[2];
        spec.read_paths = lists[3];
        spec.write_paths = lists[4];
        rc = fr_policy_build(&spec, out, err, errlen);
    }
    for (int i = 0; i < PACK_NLISTS; i++)
        free(lists[i]);
    return rc;
}
