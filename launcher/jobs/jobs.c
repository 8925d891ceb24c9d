/* jobs.c — job lines in, result lines out. See include/fitrun/jobs.h. */
#include "fitrun/jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"

/* ---- jobs --------------------------------------------------------------- */

void fr_job_clear(struct fr_job *j)
{
    free(j->id);
    json_decref(j->obj);
    free(j->text);
    j->id = NULL;
    j->obj = NULL;
    j->text = NULL;
    j->len = 0;
}

int fr_job_parse(const char *text, size_t len, long line, struct fr_job *out, const char **type, char *err,
                 size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->line = line;
    json_error_t je;
    /* JSON_REJECT_DUPLICATES: {"id": "a", "id": "b"} is ambiguous.
     * JSON_DECODE_ANY: so that `5` is "not an object", not a parse error.
     * JSON_ALLOW_NUL: "stdin" may carry NUL bytes; ids and argv may not
     * (checked where they are used). */
    json_t *obj = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!obj) {
        *type = "InvalidJSON";
        snprintf(err, errlen, "line %ld: not valid JSON: %s (column %d)", line, je.text, je.column);
        return -1;
    }
    if (!json_is_object(obj)) {
        json_decref(obj);
        *type = "InvalidJSON";
        snprintf(err, errlen, "line %ld: a job must be a JSON object", line);
        return -1;
    }
    out->obj = obj;
    out->text = malloc(len + 1);
    if (!out->text) {
        *type = "InvalidJob";
        snprintf(err, errlen, "line %ld: out of memory", line);
        return -1;
    }
    memcpy(out->text, text, len);
    out->text[len] = '\0';
    out->len = len;
    json_t *id = json_object_get(obj, "id");
    if (!id) {
        *type = "MissingId";
        snprintf(err, errlen, "line %ld: the job has no \"id\"", line);
        return -1;
    }
    if (!json_is_string(id) || json_string_length(id) == 0 || strlen(json_string_value(id)) != json_string_length(id)) {
        *type = "MissingId";
        snprintf(err, errlen, "line %ld: \"id\" must be a non-empty string", line);
        return -1;
    }
    out->id = strdup(json_string_value(id));
    if (!out->id) {
        *type = "InvalidJob";
        snprintf(err, errlen, "line %ld: out of memory", line);
        return -1;
    }
    return 0;
}

/* ---- UTF-8 -------------------------------------------------------------- */

json_t *fr_json_bytes(const char *s, size_t n)
{
    /* Fast path: jansson validates and refuses invalid UTF-8. */
    json_t *j = json_stringn(s, n);
    if (j)
        return j;
    /* Each bad byte becomes U+FFFD (3 bytes), so 3n is enough. */
    char *buf = malloc(n * 3 + 1);
    if (!buf)
        return NULL;
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t l = fr_utf8_seq(u + i, n - i);
        if (l) {
            memcpy(buf + o, u + i, l);
            o += l;
            i += l;
        } else {
            memcpy(buf + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    j = json_stringn(buf, o);
    free(buf);
    return j;
}

/* ---- results ------------------------------------------------------------ */

/* json_object_set_new that remembers the first failure. */
static void put(json_t *o, const char *key, json_t *v, bool *ok)
{
    if (!v || json_object_set_new(o, key, v) < 0)
        *ok = false;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *uint_json(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

char *fr_result_line(const struct fr_result *r, size_t *len)
{
    /* jansson keeps insertion order, which is the schema order. */
    json_t *o = json_object();
    if (!o)
        return NULL;
    bool ok = true;
    bool usage = r->has_usage;
    put(o, "id", r->id ? fr_json_bytes(r->id, strlen(r->id)) : json_null(), &ok);
    put(o, "status", json_string(fr_status_name(r->status)), &ok);
    put(o, "exit_code", r->has_exit ? json_integer(r->exit_code) : json_null(), &ok);
    put(o, "signal", str_or_null(r->signal), &ok);
    put(o, "syscall", str_or_null(r->syscall), &ok);
    put(o, "error_type", str_or_null(r->error_type), &ok);
    size_t mlen = r->error_message ? r->error_message_len ? r->error_message_len : strlen(r->error_message) : 0;
    put(o, "error_message", r->error_message ? fr_json_bytes(r->error_message, mlen) : json_null(), &ok);
    put(o, "stdout", r->has_output ? fr_json_bytes(r->out ? r->out : "", r->out_len) : json_null(), &ok);
    put(o, "stderr", r->has_output ? fr_json_bytes(r->err ? r->err : "", r->err_len) : json_null(), &ok);
    put(o, "cpu_ms", usage ? uint_json(r->cpu_ms) : json_null(), &ok);
    put(o, "wall_ms", usage ? uint_json(r->wall_ms) : json_null(), &ok);
    put(o, "max_rss_kb", usage ? uint_json(r->max_rss_kb) : json_null(), &ok);
    put(o, "worker", r->worker >= 0 ? json_integer(r->worker) : json_null(), &ok);
    put(o, "line", r->line > 0 ? json_integer(r->line) : json_null(), &ok);
    if (r->status == FR_STATUS_TIMEOUT && r->timeout != FR_TIMEOUT_NONE)
        put(o, "timeout", json_string(r->timeout == FR_TIMEOUT_CPU ? "cpu" : "wall"), &ok);
    if (r->attempts > 1)
        put(o, "attempts", json_integer(r->attempts), &ok);
    char *text = ok ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text)
        return NULL;
    /* The fields go before the closing brace: ,"key":json ... }\n */
    size_t l = strlen(text), extra = 0;
    for (size_t i = 0; i < r->nfields; i++)
        extra += strlen(r->fields[i].key) + r->fields[i].len + 4;
    char *line = realloc(text, l + extra + 2);
    if (!line) {
        free(text);
        return NULL;
    }
    l--; /* the '}' */
    for (size_t i = 0; i < r->nfields; i++) {
        const struct fr_result_field *f = &r->fields[i];
        l += (size_t)sprintf(line + l, ",\"%s\":", f->key);
        memcpy(line + l, f->json, f->len);
        l += f->len;
    }
    line[l++] = '}';
    line[l] = '\n';
    line[l + 1] = '\0';
    if (len)
        *len = l + 1;
    return line;
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

struct fr_idset {
    size_t cap, n; /* cap: power of two */
    char **keys;
};

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

struct fr_idset *fr_idset_new(void)
{
    struct fr_idset *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cap = 64;
    s->keys = calloc(s->cap, sizeof *s->keys);
    if (!s->keys) {
        free(s);
        return NULL;
    }
    return s;
}

void fr_idset_free(struct fr_idset *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->cap; i++)
        free(s->keys[i]);
    free(s->keys);
    free(s);
}

static size_t slot_of(const struct fr_idset *s, const char *key)
{
    size_t i = hash(key) & (s->cap - 1);
    while (s->keys[i] && strcmp(s->keys[i], key))
        i = (i + 1) & (s->cap - 1);
    return i;
}

static int grow(struct fr_idset *s)
{
    size_t ncap = s->cap * 2;
    char **nk = calloc(ncap, sizeof *nk);
    if (!nk)
        return -1;
    char **old = s->keys;
    size_t ocap = s->cap;
    s->keys = nk;
    s->cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i])
            s->keys[slot_of(s, old[i])] = old[i];
    free(old);
    return 0;
}

int fr_idset_add(struct fr_idset *s, const char *key)
{
    if ((s->n + 1) * 2 > s->cap && grow(s) < 0)
        return -1;
    size_t i = slot_of(s, key);
    if (s->keys[i])
        return 0;
    if (!(s->keys[i] = strdup(key)))
        return -1;
    s->n++;
    return 1;
}

bool fr_idset_has(const struct fr_idset *s, const char *key)
{
    return s->keys[slot_of(s, key)] != NULL;
}

size_t fr_idset_size(const struct fr_idset *s)
{
    return s->n;
}

int fr_idset_merge(struct fr_idset *dst, const struct fr_idset *src)
{
    for (size_t i = 0; i < src->cap; i++)
        if (src->keys[i] && fr_idset_add(dst, src->keys[i]) < 0)
            return -1;
    return 0;
}
