/* fitrun/jobs.h — the JSON Lines formats of `fitrun run`: jobs in, results
 * out. Pure functions over strings; no I/O. A job line is read in one pass
 * as text (fitrun/jsonscan.h, FR_JSON_LINE: exactly what jansson accepts)
 * and never becomes a tree: runtimes take the spans they need. A result
 * line is written as text, byte for byte what jansson's compact dump of
 * the same object gives.
 *
 * A job is one JSON object per input line with a non-empty string "id";
 * which other fields it needs is the runtime's business (exec: "argv",
 * optional "stdin"; python: "code", "inputs", ...).
 *
 * A result is one JSON object per line with the fixed fields, always all
 * present and always in this order (null where they do not apply):
 *   id, status, exit_code, signal, syscall, error_type, error_message,
 *   stdout, stderr, cpu_ms, wall_ms, max_rss_kb, worker
 * then
 *   line      the job's 1-based physical input line (always; --resume and
 *             `fitrun merge` rely on it)
 * followed, only when they apply, by
 *   timeout   "cpu" | "wall"        (status "timeout")
 *   attempts  2                     (the job was retried after a crash)
 * and then the fields of runtimes whose jobs produce outputs (python:
 * outputs, passed, error_line). docs/run.md describes every field. */
#ifndef FITRUN_JOBS_H
#define FITRUN_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fitrun/jsonscan.h"
#include "fitrun/status.h"

/* Longest input line accepted (a job with a long program and big inputs is
 * still far below this); longer lines are `invalid`. */
#define FR_JOB_MAX_LINE (64u << 20)

struct fr_job {
    long line;                      /* 1-based physical line of the input */
    char *id;                       /* owned, decoded; NULL when the line has no usable id */
    char *text;                     /* owned copy of the line as read (NUL-terminated); NULL when
                                       it is not a JSON object */
    size_t len;                     /* of text */
    struct fr_json_member *members; /* owned: the object's members, spans into text */
    size_t nmembers;
    int attempts; /* times the pool has started it (crash retry policy) */
};

/* Parse one input line (without its '\n'). Returns 0 for an object with a
 * usable id. Returns -1 for an invalid line with the reason in err and the
 * error type in *type ("InvalidJSON", "MissingId"; "InvalidJob" when out
 * of memory); out->id is still set when the object had a usable id. In
 * both cases *out must be cleared with fr_job_clear(). Messages for text
 * that is not JSON are jansson's own (json_loadb, read only then). */
int fr_job_parse(const char *text, size_t len, long line, struct fr_job *out, const char **type, char *err,
                 size_t errlen);
void fr_job_clear(struct fr_job *j);
/* The job's member `key`, or NULL when it has none. */
const struct fr_json_member *fr_job_member(const struct fr_job *j, const char *key);

/* Arbitrary bytes as a JSON string literal (malloc'd, NUL-terminated,
 * length in *len): valid UTF-8 is kept as is (NUL bytes included, as
 * \u0000), every byte that is not part of a valid UTF-8 sequence becomes
 * U+FFFD, so captured output always serialises; escaped as jansson dumps
 * strings (\" \\ \b \f \n \r \t, other control characters \u00XX, nothing
 * else). NULL only on ENOMEM. */
char *fr_json_bytes(const char *s, size_t n, size_t *len);

/* A member appended verbatim to a result line: `"key":json`. json must be
 * one valid JSON value (fitrun's own text, or text checked with
 * fr_json_value(FR_JSON_STRICT)). */
struct fr_result_field {
    const char *key; /* a plain ASCII name */
    const char *json;
    size_t len;
};

/* Everything a result line says. Pointers are borrowed. */
struct fr_result {
    const char *id; /* NULL -> null */
    enum fr_status status;
    enum fr_timeout_kind timeout; /* status timeout: cpu or wall */
    bool has_exit;                /* exit_code applies */
    int exit_code;
    const char *signal;     /* "SIGSEGV" or NULL */
    const char *syscall;    /* violation: syscall name, or NULL */
    const char *error_type; /* NULL -> null */
    const char *error_message;
    size_t error_message_len; /* it may hold NUL bytes: its length; 0 = strlen */
    bool has_output;          /* stdout/stderr apply (false -> null) */
    const char *out;
    size_t out_len;
    const char *err;
    size_t err_len;
    bool has_usage; /* cpu_ms/wall_ms/max_rss_kb apply */
    uint64_t cpu_ms, wall_ms, max_rss_kb;
    int worker;                           /* slot index; -1 -> null */
    long line;                            /* input line; <= 0 -> null */
    int attempts;                         /* > 1: "attempts" */
    const struct fr_result_field *fields; /* follow the fixed ones, in this order */
    size_t nfields;
};

/* The result as one JSON line ending in '\n' (malloc'd; *len without the
 * NUL). NULL on ENOMEM. */
char *fr_result_line(const struct fr_result *r, size_t *len);

/* The error_message of the `invalid` DuplicateId result of a line that
 * repeats an earlier id: fitrun run writes it, and merge writes the same
 * for a repeat that another shard ran as a job. buf holds
 * FR_DUPLICATE_MSG_MAX bytes (the text is cut to fit). */
#define FR_DUPLICATE_MSG_MAX 1024
void fr_duplicate_message(char *buf, long line, const char *id);

/* What --resume needs from a line of an existing results file. */
struct fr_result_key {
    char *id;       /* owned, NULL when the result has no id */
    bool duplicate; /* an `invalid` result for a repeated id: the id's own result is elsewhere */
    long line;      /* its "line", 0 when absent */
};
/* Returns 0, or -1 when the line is not a result object, or its id holds a
 * NUL byte (no job's does) (message in err). */
int fr_result_key_parse(const char *text, size_t len, struct fr_result_key *out, char *err, size_t errlen);

/* A set of strings (job ids; line numbers as decimal text). */
struct fr_idset;
struct fr_idset *fr_idset_new(void);
void fr_idset_free(struct fr_idset *s);
/* 1 = added, 0 = already there, -1 = ENOMEM. */
int fr_idset_add(struct fr_idset *s, const char *key);
bool fr_idset_has(const struct fr_idset *s, const char *key);
/* Add every key of src to dst. 0, or -1 on ENOMEM. */
int fr_idset_merge(struct fr_idset *dst, const struct fr_idset *src);
size_t fr_idset_size(const struct fr_idset *s);

#endif
