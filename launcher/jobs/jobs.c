/* jobs.c — job lines in, result lines out. See include/fitrun/jobs.h. */
#include "fitrun/jobs.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"

/* ---- jobs --------------------------------------------------------------- */

void fr_job_clear(struct fr_job *j)
{
    free(j->id);
    free(j->text);
    free(j->members);
    j->id = NULL;
    j->text = NULL;
    j->members = NULL;
    j->nmembers = 0;
    j->len = 0;
}

const struct fr_json_member *fr_job_member(const struct fr_job *j, const char *key)
{
    return fr_json_member_find(j->members, j->nmembers, key);
}

/* jansson's words for text that is not JSON (only read for such a line). */
static void not_json(const char *text, size_t len, long line, char *err, size_t errlen)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (o) /* a raw NUL byte jansson skipped (fitrun/jsonscan.h) */
        snprintf(err, errlen, "line %ld: not valid JSON: a NUL byte outside a string", line);
    else
        snprintf(err, errlen, "line %ld: not valid JSON: %s (column %d)", line, je.text, je.column);
    json_decref(o);
}

int fr_job_parse(const char *text, size_t len, long line, struct fr_job *out, const char **type, char *err,
                 size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->line = line;
    int kind = fr_json_line(text, len, &out->members, &out->nmembers);
    if (kind == FR_JSON_LINE_NOMEM) {
        *type = "InvalidJob";
        snprintf(err, errlen, "line %ld: out of memory", line);
        return -1;
    }
    if (kind == FR_JSON_LINE_INVALID) {
        *type = "InvalidJSON";
        not_json(text, len, line, err, errlen);
        return -1;
    }
    if (kind == FR_JSON_LINE_OTHER) {
        *type = "InvalidJSON";
        snprintf(err, errlen, "line %ld: a job must be a JSON object", line);
        return -1;
    }
    /* The members are spans of the caller's text: move them to our copy. */
    out->text = malloc(len + 1);
    if (!out->text) {
        *type = "InvalidJob";
        snprintf(err, errlen, "line %ld: out of memory", line);
        return -1;
    }
    memcpy(out->text, text, len);
    out->text[len] = '\0';
    out->len = len;
    for (size_t i = 0; i < out->nmembers; i++) {
        out->members[i].key.p = out->text + (out->members[i].key.p - text);
        out->members[i].value.p = out->text + (out->members[i].value.p - text);
    }
    const struct fr_json_member *id = fr_job_member(out, "id");
    if (!id) {
        *type = "MissingId";
        snprintf(err, errlen, "line %ld: the job has no \"id\"", line);
        return -1;
    }
    long idlen = -1;
    if (id->value.p[0] == '"' && (out->id = malloc(id->value.n)))
        idlen = fr_json_string_decode(id->value, out->id, id->value.n - 1);
    if (idlen <= 0 || memchr(out->id, '\0', (size_t)idlen)) {
        /* An id with a NUL (\u0000) could not be an argument, a file name
         * or a C string of the tools that read results. */
        bool nul = idlen > 0;
        *type = out->id || id->value.p[0] != '"' ? "MissingId" : "InvalidJob";
        snprintf(err, errlen,
                 nul                                ? "line %ld: \"id\" must not contain a NUL character (\\u0000)"
                 : out->id || id->value.p[0] != '"' ? "line %ld: \"id\" must be a non-empty string"
                                                    : "line %ld: out of memory",
                 line);
        free(out->id);
        out->id = NULL;
        return -1;
    }
    out->id[idlen] = '\0';
    return 0;
}

/* ---- result lines: text as jansson's compact dump writes it ---------------- */

struct out {
    char *p;
    size_t len, cap;
    bool failed;
};

static bool reserve(struct out *o, size_t more)
{
    if (o->failed)
        return false;
    if (o->len + more <= o->cap)
        return true;
    size_t ncap = o->cap ? o->cap : 256;
    while (ncap < o->len + more)
        ncap *= 2;
    char *n = realloc(o->p, ncap);
    if (!n) {
        o->failed = true;
        return false;
    }
    o->p = n;
    o->cap = ncap;
    return true;
}

static void put(struct out *o, const char *s, size_t n)
{
    if (reserve(o, n)) {
        memcpy(o->p + o->len, s, n);
        o->len += n;
    }
}

static void put_s(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

static void put_int(struct out *o, long long v)
{
    char buf[24];
    put(o, buf, (size_t)snprintf(buf, sizeof buf, "%lld", v));
}

/* The escape jansson's dump_string writes for an ASCII byte, or NULL. */
static const char *escape_of(unsigned char c, char buf[8])
{
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default:
        if (c >= 0x20)
            return NULL;
        snprintf(buf, 8, "\\u%04X", c);
        return buf;
    }
}

/* s[0, n) as a JSON string literal: fr_json_bytes's rules. */
static void put_str(struct out *o, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    if (!reserve(o, n + 2))
        return;
    o->p[o->len++] = '"';
    size_t run = 0; /* bytes of u[i - run, i) to copy as they are */
    for (size_t i = 0; i < n;) {
        char esc[8];
        const char *e = NULL;
        size_t l = 1;
        if (u[i] < 0x80)
            e = escape_of(u[i], esc);
        else if (!(l = fr_utf8_seq(u + i, n - i)))
            e = "\xEF\xBF\xBD", l = 1;
        if (!e) {
            run += l;
            i += l;
            continue;
        }
        put(o, (const char *)u + i - run, run);
        run = 0;
        put_s(o, e);
        i += l;
    }
    put(o, (const char *)u + n - run, run);
    put(o, "\"", 1);
}

char *fr_json_bytes(const char *s, size_t n, size_t *len)
{
    struct out o = {0};
    put_str(&o, s, n);
    put(&o, "", 1);
    if (o.failed) {
        free(o.p);
        return NULL;
    }
    *len = o.len - 1;
    return o.p;
}

/* ,"key": (the first member without its comma) */
static void put_key(struct out *o, const char *key)
{
    put(o, o->len > 1 ? ",\"" : "\"", o->len > 1 ? 2 : 1);
    put_s(o, key);
    put(o, "\":", 2);
}

static void put_str_or_null(struct out *o, const char *key, const char *s)
{
    put_key(o, key);
    if (s)
        put_str(o, s, strlen(s));
    else
        put(o, "null", 4);
}

static void put_uint_or_null(struct out *o, const char *key, bool has, uint64_t v)
{
    put_key(o, key);
    if (has)
        put_int(o, v > (uint64_t)INT64_MAX ? INT64_MAX : (long long)v);
    else
        put(o, "null", 4);
}

char *fr_result_line(const struct fr_result *r, size_t *len)
{
    struct out o = {0};
    reserve(&o, 512 + r->out_len + r->err_len);
    put(&o, "{", 1);
    put_key(&o, "id");
    if (r->id)
        put_str(&o, r->id, strlen(r->id));
    else
        put(&o, "null", 4);
    put_str_or_null(&o, "status", fr_status_name(r->status));
    put_key(&o, "exit_code");
    if (r->has_exit)
        put_int(&o, r->exit_code);
    else
        put(&o, "null", 4);
    put_str_or_null(&o, "signal", r->signal);
    put_str_or_null(&o, "syscall", r->syscall);
    put_str_or_null(&o, "error_type", r->error_type);
    put_key(&o, "error_message");
    if (r->error_message)
        put_str(&o, r->error_message, r->error_message_len ? r->error_message_len : strlen(r->error_message));
    else
        put(&o, "null", 4);
    put_key(&o, "stdout");
    if (r->has_output)
        put_str(&o, r->out ? r->out : "", r->out ? r->out_len : 0);
    else
        put(&o, "null", 4);
    put_key(&o, "stderr");
    if (r->has_output)
        put_str(&o, r->err ? r->err : "", r->err ? r->err_len : 0);
    else
        put(&o, "null", 4);
    put_uint_or_null(&o, "cpu_ms", r->has_usage, r->cpu_ms);
    put_uint_or_null(&o, "wall_ms", r->has_usage, r->wall_ms);
    put_uint_or_null(&o, "max_rss_kb", r->has_usage, r->max_rss_kb);
    put_key(&o, "worker");
    if (r->worker >= 0)
        put_int(&o, r->worker);
    else
        put(&o, "null", 4);
    put_key(&o, "line");
    if (r->line > 0)
        put_int(&o, r->line);
    else
        put(&o, "null", 4);
    if (r->status == FR_STATUS_TIMEOUT && r->timeout != FR_TIMEOUT_NONE)
        put_str_or_null(&o, "timeout", r->timeout == FR_TIMEOUT_CPU ? "cpu" : "wall");
    if (r->attempts > 1) {
        put_key(&o, "attempts");
        put_int(&o, r->attempts);
    }
    /* The runtime's fields, verbatim, after the fixed ones. */
    for (size_t i = 0; i < r->nfields; i++) {
        put_key(&o, r->fields[i].key);
        put(&o, r->fields[i].json, r->fields[i].len);
    }
    put(&o, "}\n", 3); /* with the NUL */
    if (o.failed) {
        free(o.p);
        return NULL;
    }
    if (len)
        *len = o.len - 1;
    return o.p;
}

void fr_duplicate_message(char *buf, long line, const char *id)
{
    snprintf(buf, FR_DUPLICATE_MSG_MAX, "line %ld: duplicate id '%s' (an earlier line has it)", line, id);
}

int fr_result_key_parse(const char *text, size_t len, struct fr_result_key *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_ALLOW_NUL, &je); /* stdout may hold NULs */
    if (!o || !json_is_object(o) || !json_is_string(json_object_get(o, "status"))) {
        snprintf(err, errlen, "not a result line: %s", o ? "no \"status\"" : je.text);
        json_decref(o);
        return -1;
    }
    json_t *id = json_object_get(o, "id");
    json_t *type = json_object_get(o, "error_type");
    json_t *line = json_object_get(o, "line");
    bool invalid = !strcmp(json_string_value(json_object_get(o, "status")), "invalid");
    /* No job has such an id (fr_job_parse refuses it); kept, "a\u0000b"
     * would read as job "a". */
    if (json_is_string(id) && memchr(json_string_value(id), '\0', json_string_length(id))) {
        snprintf(err, errlen, "not a result line: its \"id\" holds a NUL byte, which no job id does");
        json_decref(o);
        return -1;
    }
    if (json_is_string(id) && !(out->id = strdup(json_string_value(id)))) {
        snprintf(err, errlen, "out of memory");
        json_decref(o);
        return -1;
    }
    out->duplicate = invalid && json_is_string(type) && !strcmp(json_string_value(type), "DuplicateId");
    if (json_is_integer(line) && json_integer_value(line) > 0)
        out->line = (long)json_integer_value(line);
    json_decref(o);
    return 0;
}

/* ---- string set (open addressing, FNV-1a) ------------------------------- */

/* Open addressing over one text arena: the keys, NUL-terminated, one after
 * the other (no allocation per key), and a table of 8-byte slots, each
 * (offset + 1) of its key in the arena (low 40 bits; 0 = empty) and 24
 * bits of the key's hash (compared before the key itself). A key of n
 * characters costs n + 1 bytes plus 8 / load-factor (at most 0.7) of
 * table: about 25 bytes for an id like "00d62c1b#2", against ~50 for a
 * strdup and a pointer slot. */
struct fr_idset {
    size_t cap, n; /* cap: power of two */
    uint64_t *slots;
    char *text;
    size_t tlen, tcap;
};

#define OFF_BITS 40
#define OFF_MASK ((1ull << OFF_BITS) - 1)

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static uint64_t tag_of(uint64_t h)
{
    return (h >> OFF_BITS) << OFF_BITS;
}

struct fr_idset *fr_idset_new(void)
{
    struct fr_idset *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cap = 64;
    s->slots = calloc(s->cap, sizeof *s->slots);
    if (!s->slots) {
        free(s);
        return NULL;
    }
    return s;
}

void fr_idset_free(struct fr_idset *s)
{
    if (!s)
        return;
    free(s->slots);
    free(s->text);
    free(s);
}

static const char *key_at(const struct fr_idset *s, uint64_t slot)
{
    return s->text + ((slot & OFF_MASK) - 1);
}

/* The slot holding key (hash h), or the empty slot where it would go. */
static size_t slot_of(const struct fr_idset *s, const char *key, uint64_t h)
{
    size_t i = h & (s->cap - 1);
    uint64_t tag = tag_of(h);
    while (s->slots[i] && (tag_of(s->slots[i]) != tag || strcmp(key_at(s, s->slots[i]), key)))
        i = (i + 1) & (s->cap - 1);
    return i;
}

static int grow(struct fr_idset *s)
{
    size_t ncap = s->cap * 2;
    uint64_t *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slots[i])
            continue;
        size_t j = hash(key_at(s, s->slots[i])) & (ncap - 1);
        while (ns[j])
            j = (j + 1) & (ncap - 1);
        ns[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = ns;
    s->cap = ncap;
    return 0;
}

/* Copy key (len bytes + NUL) to the arena; its offset + 1, or 0. */
static uint64_t store(struct fr_idset *s, const char *key, size_t len)
{
    if (s->tlen + len + 1 > s->tcap) {
        size_t ncap = s->tcap ? s->tcap : 4096;
        while (ncap < s->tlen + len + 1)
            ncap *= 2;
        if (ncap > OFF_MASK)
            return 0;
        char *nt = realloc(s->text, ncap);
        if (!nt)
            return 0;
        s->text = nt;
        s->tcap = ncap;
    }
    memcpy(s->text + s->tlen, key, len + 1);
    s->tlen += len + 1;
    return s->tlen - len;
}

int fr_idset_add(struct fr_idset *s, const char *key)
{
    if ((s->n + 1) * 10 > s->cap * 7 && grow(s) < 0)
        return -1;
    uint64_t h = hash(key);
    size_t i = slot_of(s, key, h);
    if (s->slots[i])
        return 0;
    uint64_t off = store(s, key, strlen(key));
    if (!off)
        return -1;
    s->slots[i] = tag_of(h) | off;
    s->n++;
    return 1;
}

bool fr_idset_has(const struct fr_idset *s, const char *key)
{
    return s->slots[slot_of(s, key, hash(key))] != 0;
}

size_t fr_idset_size(const struct fr_idset *s)
{
    return s->n;
}

int fr_idset_merge(struct fr_idset *dst, const struct fr_idset *src)
{
    for (size_t i = 0; i < src->cap; i++)
        if (src->slots[i] && fr_idset_add(dst, key_at(src, src->slots[i])) < 0)
            return -1;
    return 0;
}
