/* fitrun/common.h — the helpers every module uses, below all of them (the
 * sandbox library included), one file per concern in common/:
 *   errors.c  messages in the bubblewrap style (what failed, on what, why)
 *   file.c    bounded reads that refuse special files, sysroot paths
 *   parse.c   the units people write in profiles and on the command line
 *   text.c    UTF-8, terminal-safe text, human sizes, identifiers
 *   env.c     a variable of an envp array
 *   proc.c    the running binary's path, the monotonic clock, timevals
 *   proctree.c  the CPU time of a running process tree
 * Parsers and text functions are pure. */
#ifndef FITRUN_COMMON_H
#define FITRUN_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Exit statuses fitrun itself uses (see README "Exit status"). */
enum {
    FR_EXIT_USAGE = 125, /* fitrun's own error: bad option, bad profile */
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

/* Read at most `max` bytes of the regular file `path` into a fresh
 * NUL-terminated buffer. The open never blocks and never takes a
 * controlling terminal (O_NONBLOCK | O_NOCTTY | O_CLOEXEC), and anything
 * but a regular file is refused before a byte is read, so a FIFO, a device
 * such as /dev/zero or a directory planted where a file was expected
 * cannot hang or flood the caller. Returns NULL and sets errno on failure:
 * EFBIG larger than max, EISDIR a directory, EINVAL another file type
 * (FIFO, device, socket), or open's own. `*len` (optional) receives the
 * length. Caller frees. */
char *fr_read_file(const char *path, size_t max, size_t *len);
/* buf = dir + "/" + name ("/" as dir gives "/name"). A path that does not
 * fit leaves buf "" (so reading it fails) and returns false. */
bool fr_dir_file(char *buf, size_t n, const char *dir, const char *name);
/* Words for an errno from fr_read_file ("not a regular file ..." for
 * EINVAL, else strerror). */
const char *fr_read_strerror(int err);

/* Join `root` and an absolute `path` ("/" root means the path itself) into
 * buf. Returns buf, or NULL (errno=ENAMETOOLONG) when it does not fit. */
char *fr_path_join(char *buf, size_t n, const char *root, const char *path);

/* The largest size and duration fitrun accepts anywhere (profiles, the
 * command line): 1 EiB and 365 days. Beyond them a value is an error, so
 * no later arithmetic (ms -> ns, bytes -> rlimits) can overflow. */
#define FR_SIZE_MAX (1ull << 60)
#define FR_DURATION_MAX_MS (365ull * 24 * 3600 * 1000)

/* "512M", "2G", "1.5GiB", "4096", "64k" -> bytes (binary multiples:
 * K=1024). The value must be a whole number of bytes ("1.5K" is 1536;
 * "0.5" and "1.3K" are errors) and at most FR_SIZE_MAX. Returns 0, or -1;
 * the _why form also says why in words (static text; why may be NULL). */
int fr_parse_size(const char *s, uint64_t *out);
int fr_parse_size_why(const char *s, uint64_t *out, const char **why);
/* "2s", "500ms", "1.5s", "2m", "1h", "250us" (bare number = seconds)
 * -> milliseconds, rounded up to whole ms (so only 0 is 0), at most
 * FR_DURATION_MAX_MS. Returns 0 or -1 (the _why form says why). */
int fr_parse_duration_ms(const char *s, uint64_t *out);
int fr_parse_duration_why(const char *s, uint64_t *out, const char **why);
/* Strict integer / double parsers: whole string, no trailing junk, leading
 * and trailing ASCII space allowed. Return 0 or -1. */
int fr_parse_i64(const char *s, int64_t *out);
int fr_parse_u64(const char *s, uint64_t *out);
int fr_parse_double(const char *s, double *out);
/* Parse a boolean: true/false, yes/no, on/off, 1/0. Returns 0 or -1. */
int fr_parse_bool(const char *s, bool *out);

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF; n >= 1 bytes available), or 0 when
 * s[0] does not start one. */
size_t fr_utf8_seq(const unsigned char *s, size_t n);

/* Text that came from a job (ids, exception names, messages) as it may
 * reach a terminal: printable ASCII and valid UTF-8 are kept; control
 * characters are shown, never sent: \n \r \t, other C0 bytes and DEL as
 * \xHH, bytes that are not UTF-8 as \xHH, C1 controls and the invisible
 * direction/line controls (bidi overrides and isolates, U+2028/9, BOM) as
 * \uHHHH. Cut with "..." to fit buf (n bytes with the NUL). Results files
 * keep the real bytes; this is only for what a person reads. Returns buf. */
char *fr_term_text(const char *s, size_t len, char *buf, size_t n);

/* An identifier as fitrun accepts one anywhere (a profile's [env] names
 * and pass_env patterns, the Python entry function, a job's names): ASCII
 * only, [A-Za-z_][A-Za-z0-9_]*, not empty. Python itself would accept more
 * (PEP 3131), but names that look alike and are not (a Cyrillic 'а' for an
 * 'a') have no place in a profile, and one rule is easier to trust. */
bool fr_is_identifier(const char *s);

/* Human-readable byte size ("512.0 MiB") into buf; returns buf. */
const char *fr_format_size(uint64_t bytes, char *buf, size_t n);

/* Trim ASCII whitespace in place at both ends; returns the trimmed start. */
char *fr_trim(char *s);

/* Value of `name` in envp (a NULL-terminated array of "NAME=value"), or
 * NULL when absent (or envp/name is NULL). The first entry wins. */
const char *fr_env_lookup(char *const *envp, const char *name);

/* The running binary's absolute path (readlink /proc/self/exe) into buf.
 * Returns 0, or -1 with errno (buf is then ""; ENAMETOOLONG when it does
 * not fit). */
int fr_self_exe(char *buf, size_t n);

/* Send one message of len bytes on a unix socket with nfds descriptors
 * (0..FR_SEND_FDS_MAX, SCM_RIGHTS), retrying EINTR; flags are sendmsg's
 * (MSG_NOSIGNAL, MSG_DONTWAIT). Returns 0, or -1 with errno (EINVAL: too
 * many descriptors; EMSGSIZE: not all of it went). */
#define FR_SEND_FDS_MAX 4
int fr_send_fds(int sock, const void *msg, size_t len, const int *fds, int nfds, int flags);
/* The descriptors a received message (recvmsg's mh) brought in SCM_RIGHTS
 * control data: up to max of them into fds, in order; the count. Any
 * beyond max are closed, so that none is left open unseen. */
struct msghdr;
int fr_received_fds(struct msghdr *mh, int *fds, int max);

/* Monotonic clock in nanoseconds. */
uint64_t fr_now_ns(void);
/* A timeval (a rusage's ru_utime or ru_stime) in microseconds. */
struct timeval;
uint64_t fr_timeval_us(const struct timeval *tv);

/* CPU time (user + system, ns) of pid and of every descendant it has now
 * (the children of each of their threads, at any depth), each one's own
 * clock plus what it reaped (cutime + cstime, clock ticks): so children a
 * process of the tree already waited for count too. What is not counted:
 * processes that left the tree by losing their parent (re-parented to a
 * subreaper or init), and those their new parent reaped. 0 when pid is
 * gone. */
uint64_t fr_tree_cpu_ns(pid_t pid);
/* The same for pid's descendants alone: neither pid's own clock nor what
 * it reaped. */
uint64_t fr_descendants_cpu_ns(pid_t pid);

#endif
