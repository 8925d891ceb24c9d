/* internal.h — pieces of the pool shared between its files (not an API). */
#ifndef FITRUN_POOL_INTERNAL_H
#define FITRUN_POOL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "fitrun/pool.h"
#include "fitrun/sandbox.h"

/* ---- input.c: jobs, line by line, from a pipe or a file ----------------- */

struct input {
    int fd;
    const char *name;
    bool pollable;      /* pipe/tty/socket: read when epoll says so; else always ready */
    bool eof;
    char *buf;          /* unconsumed bytes are buf[off, len) */
    size_t off, len, cap;
    long line;          /* physical lines handed out so far */
    bool skipping;      /* inside an over-long line: drop bytes up to its '\n' */
    bool use_pread;     /* read a regular file at pread_pos, leaving the descriptor's offset alone */
    off_t pread_pos;
};

enum input_next { INPUT_LINE, INPUT_MORE, INPUT_END, INPUT_TOO_LONG };

void input_init(struct input *in, int fd, const char *name);
void input_free(struct input *in);
/* The next complete line (without '\n'; valid until the next call) and its
 * number. INPUT_MORE: call input_fill() first. INPUT_TOO_LONG: line *lineno
 * exceeded FR_JOB_MAX_LINE and is being skipped. */
enum input_next input_next(struct input *in, const char **text, size_t *len, long *lineno);
/* One read(2). Returns > 0 bytes, 0 at end of input, -1 with errno
 * (EAGAIN: nothing yet). */
ssize_t input_fill(struct input *in);
/* Lines a regular file will produce for this shard that are neither blank
 * nor already done (for the progress total), read with pread() from the
 * start; -1 when unknown (pipes). */
long input_count(int fd, const struct fr_shard *shard, const struct fr_resume *resume);
bool line_is_blank(const char *s, size_t n);

/* ---- reap.c: the orphan reaper ------------------------------------------ */

struct reaper {
    pid_t *owned;
    size_t n, cap;
};

int reaper_own(struct reaper *r, pid_t pid);
void reaper_disown(struct reaper *r, pid_t pid);
/* Kill (SIGKILL) and reap every child of this process that is not owned and
 * not in one of `sessions` (n of them, 0 entries ignored). */
void reaper_sweep(struct reaper *r, const pid_t *sessions, int n);
/* At the end: kill and reap every child, owned or not, until none is left
 * or timeout_ms passed. Returns the number still there. */
int reaper_final(struct reaper *r, int timeout_ms);
void reaper_free(struct reaper *r);

/* ---- report.c: counts, progress, summary -------------------------------- */

#define STATUS_COUNT (FR_STATUS_CRASH + 1)

struct error_count {
    char *type;
    long n;
};

struct stats {
    uint64_t start_ns;
    int workers;
    long counts[STATUS_COUNT];
    long done;          /* results written by this run */
    long total;         /* expected results of this run; -1 = unknown (streamed input) */
    long skipped;       /* already in the results file (--resume) */
    struct error_count *types;
    size_t ntypes, captypes;
    enum fr_progress mode;      /* resolved: BAR, PLAIN or NONE */
    uint64_t next_ns;           /* next progress output */
    bool drawn;                 /* a bar is on screen */
};

void stats_init(struct stats *s, enum fr_progress mode, int workers, long total, long skipped);
void stats_free(struct stats *s);
void stats_add(struct stats *s, enum fr_status st, const char *error_type);
/* Draw the bar / print a plain line if it is time (or `force`). */
void progress_tick(struct stats *s, uint64_t now_ns, bool force);
/* At the end: draw the bar one last time and keep it. */
void progress_finish(struct stats *s);
/* Erase the bar before printing anything else on stderr. */
void progress_clear(struct stats *s);
/* The end-of-run table on stderr. `interrupted`: jobs were left unrun. */
void summary_print(struct stats *s, const char *how);

#endif
