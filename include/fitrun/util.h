/* fitrun/util.h — small helpers every module uses: error reporting in the
 * bubblewrap style (say what failed, on what, and why), bounded file reads,
 * and parsers for the units people write in profiles and on the command
 * line. Parsers are pure functions over strings. */
#ifndef FITRUN_UTIL_H
#define FITRUN_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit statuses fitrun itself uses (see README "Exit status"). */
enum {
    FR_EXIT_USAGE = 125,     /* fitrun's own error: bad option, bad profile */
    FR_EXIT_CANNOT_EXEC = 126,
    FR_EXIT_NOT_FOUND = 127,
};

/* Set by --quiet: fr_info() prints nothing. Warnings and errors still print. */
extern bool fr_quiet;

/* "fitrun: <message>\n" on stderr. fr_die exits with `status`. */
void fr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void fr_die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Like fr_die, with ": strerror(errno)" appended. */
_Noreturn void fr_die_errno(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* printf into a caller's error buffer (err may be NULL or errlen 0: no-op). */
void fr_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Read at most `max` bytes of `path` into a fresh NUL-terminated buffer.
 * Returns NULL and sets errno on failure (EFBIG when the file is larger
 * than max). `*len` (optional) receives the length. Caller frees. */
char *fr_read_file(const char *path, size_t max, size_t *len);

/* Join `root` and an absolute `path` ("/" root means the path itself) into
 * buf. Returns buf, or NULL (errno=ENAMETOOLONG) when it does not fit. */
char *fr_path_join(char *buf, size_t n, const char *root, const char *path);

/* "512M", "2G", "1.5GiB", "4096", "64k" -> bytes (binary multiples:
 * K=1024). Returns 0, or -1 on syntax error / overflow. */
int fr_parse_size(const char *s, uint64_t *out);
/* "2s", "500ms", "1.5s", "2m", "1h", "250us" (bare number = seconds)
 * -> milliseconds (rounded up to whole ms). Returns 0 or -1. */
int fr_parse_duration_ms(const char *s, uint64_t *out);
/* Strict integer / double parsers: whole string, no trailing junk, leading
 * and trailing ASCII space allowed. Return 0 or -1. */
int fr_parse_i64(const char *s, int64_t *out);
int fr_parse_u64(const char *s, uint64_t *out);
int fr_parse_double(const char *s, double *out);
/* Parse a boolean: true/false, yes/no, on/off, 1/0. Returns 0 or -1. */
int fr_parse_bool(const char *s, bool *out);

/* Human-readable byte size ("512.0 MiB") into buf; returns buf. */
const char *fr_format_size(uint64_t bytes, char *buf, size_t n);

/* Trim ASCII whitespace in place at both ends; returns the trimmed start. */
char *fr_trim(char *s);

/* Monotonic clock in nanoseconds. */
uint64_t fr_now_ns(void);

#endif
