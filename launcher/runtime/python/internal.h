/* internal.h — the C side of the warm Python runtime (kind = python),
 * shared between its files (not an API). docs/python-runtime.md is the
 * protocol; fitrun_runtime.py is the other side of it.
 *
 *   fitrun ──control (SOCK_SEQPACKET, fd 3 in the zygote)── zygote
 *     │    packed policy (a sealed memfd, fd 4) ──────────  │ builds the policy once
 *     │                                                     │ fork per slot
 *     ├──channel k (SOCK_SEQPACKET, passed by SCM_RIGHTS)── worker k (supervises)
 *     ├──status socket k (SOCK_SEQPACKET, passed with it)── worker k (STARTED only)
 *     │                                                     │ fork per job, own socket
 *     └──job, report, stdout, stderr pipes (per slot or per job)── child: reads its job,
 *                                                           applies the sandbox as slot k
 *                                                           (its listener to the worker), runs
 *                                                           the prediction, writes its report
 *
 * The pipes (pipes.c). When no process of a prediction can outlive it (the
 * policy lets none create processes: fr_policy_info.processes is false),
 * fitrun creates them once per worker and sends the child's ends with a
 * PIPES message right behind the worker's channel; the worker hands them to
 * each of its children and RUN carries none. The end of a job's bytes is
 * then the worker's EXITED, which no prediction can forge: its process is
 * dead (fork) or has put /dev/null over the ends and checked that no
 * thread of it runs on (reuse), so what the pipes hold then is all of it;
 * fitrun reads it to EAGAIN and discards what the child left unread of its
 * job. Otherwise (a prediction may leave a process behind that still holds
 * an end) fitrun creates four pipes per prediction and sends the child's
 * ends with RUN; the worker closes its copies after the fork. Either way
 * the job is framed (u32 length, native, then the JSON: byte spans of the
 * job line, never "expected"), and fitrun reads the report and the
 * streams itself, under their caps.
 *
 * The worker sends STARTED (the child's pid and a pidfd, so fitrun can
 * read its CPU clock and kill it race-free) on its status socket, which
 * fitrun does not watch: a job wakes fitrun once, for its EXITED, and
 * fitrun takes STARTED when it needs the child (status.c). EXITED (wait status,
 * rusage, and the denied call it read from the sandbox's listener, which
 * the child gave up before any of its code ran). So the worker never reads
 * a prediction's code, inputs, outputs or prints, and a child can only ever
 * write its own report, which decides nothing the child could not decide
 * by its own code (its outputs, that it raised).
 *
 * Files, one job each: locate.c (our files, the interpreter), policy.c
 * (the spec the interpreter builds its sandbox from), zygote.c (its start
 * and end), control.c (its control socket: workers on request), startup.c
 * (what the start-up is said to be), channel.c (a worker channel's
 * messages), pipes.c (a worker's own pipes), job.c (check, send),
 * collect.c (streams, report, facts), runtime.c (the ops: a job's life in
 * a slot). */
#ifndef FITRUN_PYTHON_INTERNAL_H
#define FITRUN_PYTHON_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fitrun/jsonscan.h"
#include "fitrun/pyproto.h"
#include "fitrun/runtime.h"

#define PY_SCRIPT "fitrun_runtime.py"
#define PY_CONTROL_FD 3
#define PY_POLICY_FD 4 /* the packed sandbox policy (a sealed memfd), read once */
/* A spawn request's descriptors: the worker's channel, its status
 * socket, then one cgroup.procs per cgroup hierarchy of its slot
 * (fitrun/cgroup.h). */
#define PY_SPAWN_FDS_MAX (2 + FR_CG_HIER_MAX)
/* Deepest nesting of an input, expected or output value (a scalar is 0,
 * [1] is 1). Deeper inputs are `invalid`; deeper outputs are
 * UnserializableOutput. Far below what CPython's json module decodes. */
#define PY_MAX_NESTING 100
/* A report holds the outputs ([sandbox] result bytes at most) plus a few
 * small fields (an exception's type and text, cut at 1000 characters). */
#define PY_REPORT_SLACK (16u << 10)
/* error_type / error_message kept from a report. */
#define PY_TYPE_MAX 256
#define PY_MESSAGE_MAX 4096
/* Start-up above this gets a warning naming the usual cause. */
#define PY_SLOW_START_MS 1000
#define PY_MSG_MAX 65536
/* The wire protocol's version (docs/python-runtime.md): fitrun_runtime.py's
 * PROTOCOL, said in "ready". fitrun and its Python side are built together;
 * a script from another build (FITRUN_PYTHON_DIR, a mixed install) is
 * refused rather than misread. */
#define PY_PROTOCOL 6
/* Reuse isolation: the CPU time one process may accumulate over its
 * predictions before it is replaced. Its RLIMIT_CPU is this plus one
 * prediction's backstop, so every prediction it starts still has its whole
 * backstop below the kernel's limit. */
#define PY_REUSE_CPU_MS 60000
/* After killing a child (or asking for a worker's report), how long the
 * worker's EXITED may take before the worker itself is killed. */
#define PY_ABORT_GRACE_MS 1000
/* A job's wake-up (status.c): this long after RUN, fitrun takes its
 * STARTED (watching its CPU clock from then on) and watches its report
 * pipe. Most predictions end well before, having woken fitrun once. */
#define PY_WAKE_MS 20
/* Reuse: the STARTEDs of a process's later jobs are read in batches of
 * this many (status.c). */
#define PY_STATUS_BATCH 32
/* A worker abandoned before its pid was known: killed as soon as its
 * "spawned" event names it. */
#define PY_MAX_DOOMED 64
/* How many times a run starts its interpreter again after it died (an OOM
 * kill in a container without fitrun's own cgroups): beyond that, the run
 * stops and --resume completes it. */
#define PY_ZYGOTE_RESTARTS 3

/* Channel messages: fitrun/pyproto.h (shared with the sandbox library's
 * fork worker). RUN's FRESH (reuse) is set when fitrun killed the process
 * that ran the slot's previous job for a limit: the kill may have come
 * after the process said it was done, so its worker may not know yet that
 * it is dying. A report of a sandbox failure from a process that applied
 * the sandbox (EXITED's APPLIED) is the prediction's own text. */
/* Bytes of EXITED's reason at most. */
#define PY_REPLACED_MAX 400

/* A pipe fitrun reads, up to a cap; beyond it, what comes is discarded. */
struct stream {
    int fd; /* -1 once at EOF (or given up); a worker's own pipe: -1 between jobs */
    char *buf;
    size_t len, cap; /* bytes kept, bytes allocated */
    size_t limit;    /* more than this = over */
    bool over;
};

/* What the worker's EXITED said. */
struct exit_facts {
    int wstatus;
    int violation_nr;
    bool applied; /* FR_PY_EXITED_APPLIED */
    int64_t utime_us, stime_us, max_rss_kb, wall_us, fork_us;
    char replaced[PY_REPLACED_MAX + 1]; /* "" = the process ran on (or was a fork child) */
};

enum py_kill { PY_KILL_NONE = 0, PY_KILL_CPU, PY_KILL_WALL, PY_KILL_OUTPUT, PY_KILL_RESULT };

/* fitrun's ends of a worker's own pipes (persistent mode); -1 = none. */
struct slot_pipes {
    int job_w, job_r; /* job_r: the child's end too, read only to discard what a child left unread */
    int rep, out, err;
};

struct pyslot {
    /* the worker */
    int chan;            /* our end of its channel; -1 = none */
    bool fresh;          /* the next RUN says FR_PY_RUN_FRESH */
    int status;          /* our end of its status socket (STARTED); -1 = none */
    bool status_watched; /* watched until a STARTED it is waited for comes */
    int proc_fd;         /* pidfd of the process that runs its jobs (status.c); -1 = none known */
    pid_t proc_pid;
    unsigned queued;         /* STARTEDs maybe on the status socket, not read */
    pid_t pid;               /* 0 until its "spawned" event */
    int pidfd;               /* for signals (not our child: its pid could be reused); -1 = none */
    unsigned token;          /* spawn token of the current worker */
    struct slot_pipes pipes; /* persistent mode: the current worker's, created with its channel */
    bool stray_warned;       /* bytes came between its jobs (said once per worker) */
    /* the job in flight */
    const struct fr_job *job; /* NULL = idle */
    uint32_t seq;
    uint64_t begin_ns;
    int job_w;            /* our end of the job pipe; -1 once all sent */
    bool job_watched;     /* job_w is registered (the pipe was full) */
    uint32_t frame;       /* the job's length, sent before it */
    struct iovec iov[12]; /* what is left to send: the frame, then spans of job->text */
    int iovcnt, iovpos;
    struct stream out, err, rep;
    pid_t child;                /* from STARTED; 0 = not yet */
    int child_fd;               /* its pidfd (proc_fd: not the job's to close); -1 = not yet */
    enum py_kill kill;          /* why we killed the child (or will, once STARTED names it) */
    enum fr_abort_reason abort; /* the pool's abort being honoured; 0 = none */
    bool awake;                 /* the job's wake-up happened: its report pipe is watched, STARTED taken */
    unsigned leftover;          /* PY_PIPE_* bits: pipes EXITED found bytes in that the job does not read */
    bool exited;
    struct exit_facts facts;
    char type[PY_TYPE_MAX]; /* error_type decoded from the report */
    char *message;          /* error_message decoded from the report (malloc'd) */
    size_t message_len;
};

struct pyrt {
    pid_t zygote;
    int ctl;
    int nslots;
    struct pyslot *slots;
    unsigned next_token;
    bool stopping;
    unsigned doomed[PY_MAX_DOOMED];
    int ndoomed;
    char script[PATH_MAX];
    char lib[PATH_MAX];
    char interpreter[PATH_MAX]; /* the profile's, PATH-resolved when it is a command name */
    uint64_t result_cap;        /* [sandbox] result */
    bool reuse;                 /* [runtime] isolation = reuse: a job's process may live on */
    bool persistent;            /* pipes per worker, not per job (no prediction can create processes) */
    bool running;               /* start is over: a dead interpreter is started again (py_zygote_restart) */
    int restarts;               /* how many times it was */
};

static inline struct pyrt *PY(struct fr_runtime *rt)
{
    return rt->priv;
}

/* ---- locate.c ---- */
int py_find_script(const char *self_exe, char *out, size_t n, char *err, size_t errlen);
int py_find_lib(const char *self_exe, char *out, size_t n, char *err, size_t errlen);
/* interpreter as a path, or a command name searched in envp's PATH (as
 * execvp would). Returns 0 with an absolute or relative path in out, or -1. */
int py_find_interpreter(const char *interpreter, char *const *envp, char *out, size_t n, char *err, size_t errlen);

/* ---- policy.c ---- */
/* The profile's policy for nslots workers whose predictions' cgroups use
 * cg_ctls (FR_CG_*, fr_cgroup_policy_spec), packed into a sealed memfd
 * (O_CLOEXEC): the descriptor, or -1 with err. */
int py_policy_memfd(const struct fr_profile *p, int nslots, unsigned cg_ctls, char *err, size_t errlen);

/* ---- zygote.c ---- */
/* Find our files, start the interpreter and wait for "ready" (returned, a
 * new reference). py->script, lib, interpreter are filled; py->nslots
 * is the number of workers the policy is built for. */
json_t *py_zygote_start(struct pyrt *py, const struct fr_runtime_config *cfg, char *err, size_t errlen);
/* Kill the zygote's process group and reap the zygote. */
void py_zygote_end(struct pyrt *py);
/* Close the zygote's control socket (unwatched first), if open. */
void py_ctl_close(struct fr_runtime *rt);
/* The interpreter died during the run: start it again (blocking, its
 * prelude runs again), at most PY_ZYGOTE_RESTARTS times. Its workers died
 * with it; each slot gets a new one from the new interpreter when its
 * channel's EOF comes or its next job starts. 0, or -1: the run must stop
 * (a message was given), or it is stopping already. The control socket is
 * closed either way before anything else. */
int py_zygote_restart(struct fr_runtime *rt);
/* Blocking, during start: the next control message. */
ssize_t py_ctl_wait(struct pyrt *py, char *buf, size_t n);

/* ---- startup.c ---- */
/* "python: ... started once with N workers in 0.42 s (...)", and a warning
 * when that was slow. */
void py_report_startup(const struct pyrt *py, json_t *ready, int nslots, uint64_t total_ms);

/* ---- control.c ---- */
/* A fresh channel for slot `slot`, asked of the zygote; watched when watch. */
int py_spawn_worker(struct fr_runtime *rt, int slot, bool watch);
/* Kill the worker of s (its child dies with it), now or once its pid is known. */
void py_kill_worker(struct pyrt *py, struct pyslot *s);
void py_drop_channel(struct fr_runtime *rt, struct pyslot *s);
void py_ctl_message(struct fr_runtime *rt, const char *msg, size_t len);
void py_ctl_event(struct fr_runtime *rt, uint32_t events);

/* ---- channel.c ---- */
/* One message from a worker, decoded. */
struct py_msg {
    char kind;               /* 'S' STARTED, 'E' EXITED, 'F' FAILED, anything else: unexpected */
    size_t len;              /* bytes received */
    uint32_t seq;            /* the job it is about (0 when too short to say) */
    bool well_formed;        /* the length its kind needs (EXITED: and no time or size below 0) */
    int fd;                  /* a descriptor that came with it (STARTED: the child's pidfd), or -1 */
    pid_t pid;               /* STARTED: the child */
    int64_t cpu_base_ns;     /* STARTED: its CPU clock when the job began (reuse; 0 for a fork child) */
    struct exit_facts facts; /* EXITED */
    const char *why;         /* FAILED: the reason (not NUL-terminated), in the caller's buffer */
    size_t why_len;
};
/* What the message of len bytes at m says (kind, seq, well_formed and the
 * fields of its kind; fd and len are py_recv's). */
void py_msg_decode(const char *m, size_t len, struct py_msg *out);
/* RUN for job seq with the child's four pipe ends (nfds 4), or with none
 * (nfds 0: the worker's own pipes). 0 or -1 (errno). */
int py_send_run(int chan, uint32_t seq, unsigned flags, const int *fds, int nfds);
/* PIPES: the child's ends of a worker's own pipes (job read end, report,
 * stdout, stderr write ends). 0 or -1 (errno). */
int py_send_pipes(int chan, const int fds[4]);
/* The next message (1), none waiting (0), or the worker is gone (-1: EOF
 * or an error). buf (n bytes) holds the message. */
int py_recv(int chan, char *buf, size_t n, struct py_msg *m);
/* The status socket's messages, up to max (at most PY_STATUS_BATCH_MAX)
 * in one recvmmsg(2), each in its bufs[i]: how many (0: none waiting), or
 * -1 (EOF or an error: the worker is gone). */
#define PY_STATUS_MSG_MAX 64
#define PY_STATUS_BATCH_MAX 64
int py_recv_status(int sock, struct py_msg *out, char (*bufs)[PY_STATUS_MSG_MAX], int max);

/* ---- status.c ---- */
/* Take the job's STARTED from the status socket: the child is the slot's
 * (child, child_fd, its CPU clock watched) and, when no STARTED is there
 * yet, the socket is watched until it comes. True when the child is
 * known. */
bool py_take_started(struct fr_runtime *rt, int slot);
/* The job is over: its STARTED is read now or later (status.c), and the
 * slot's pidfd closed unless its process runs the next job. */
void py_status_end(struct fr_runtime *rt, int slot);
/* The worker is gone: its status socket and the slot's pidfd closed. */
void py_status_close(struct fr_runtime *rt, struct pyslot *s);
/* Just after RUN: the wake-up due PY_WAKE_MS after it (the pool's
 * fr_host_wake_at; ops->wake calls py_job_wake). */
void py_job_asleep(struct fr_runtime *rt, int slot);
/* The job's wake-up (its time came, a kill): STARTED taken, the report pipe
 * watched. Once per job. */
void py_job_wake(struct fr_runtime *rt, int slot);
/* The job is over: the report pipe watched again, STARTED dropped. */
void py_job_idle(struct fr_runtime *rt, int slot);

/* ---- pipes.c ---- */
/* Persistent mode: the pipes of the worker just given channel chan in
 * slot s, their child ends sent with PIPES; fitrun's read ends watched.
 * 0, or -1 (errno) with nothing left open. */
int py_slot_pipes_open(struct fr_runtime *rt, int slot, int chan);
/* Close fitrun's ends (the worker is gone or going); the slot's job, if
 * any, keeps what its streams read. */
void py_slot_pipes_close(struct fr_runtime *rt, struct pyslot *s);
bool py_slot_pipes_ok(const struct pyslot *s);
/* Which of the worker's pipes hold bytes or are at EOF, in one poll(2):
 * PY_PIPE_* bits; PY_PIPES_ALL when poll fails. */
#define PY_PIPE_JOB 1u
#define PY_PIPE_REPORT 2u
#define PY_PIPE_OUT 4u
#define PY_PIPE_ERR 8u
#define PY_PIPES_ALL 15u
unsigned py_slot_pipes_ready(const struct pyslot *s);
/* Between jobs: discard what the pipes in `which` (PY_PIPE_* bits) hold
 * (a job's leftovers: the unread rest of its job, what its child wrote).
 * Returns -1 when one is at EOF (the worker is gone), else 0. */
int py_slot_pipes_drain(struct pyslot *s, unsigned which);

/* ---- job.c ---- */
int py_check(struct fr_runtime *rt, const struct fr_job *job, char *err, size_t errlen);
/* The job for the child, framed: its length (u32, native), then spans of
 * job->text, into s->iov. */
int py_job_spans(struct pyslot *s, const struct fr_job *job, char *err, size_t errlen);
/* Write what the pipe takes. Returns 1 when all is sent (job_w -1: closed,
 * or a worker's own pipe unwatched), 0 when more is left (EPOLLOUT
 * watched), -1 on a real error. */
int py_job_flush(struct fr_runtime *rt, struct pyslot *s);

/* ---- collect.c ---- */
void py_stream_open(struct stream *st, int fd, size_t limit);
/* Read what is there (up to a short read). Returns 1 at EOF, 0 for more
 * later, 2 when it went over the limit in this call. A stream already
 * over discards what it reads (a bounded amount per call: more later). */
int py_stream_read(struct stream *st);
/* Read to EAGAIN (all writers are done: bounded by what the pipe holds),
 * what is over the limit discarded. 1 at EOF, else 0. */
int py_stream_drain(struct stream *st);
/* Read and discard up to max_reads reads (0: no bound) of what fd holds;
 * *dropped (if not NULL) += the bytes. 0 at EAGAIN, 1 at EOF (or an error
 * that ends it), 2 when the bound was reached first. */
int py_fd_discard(int fd, unsigned max_reads, size_t *dropped);
void py_stream_close(struct fr_runtime *rt, struct stream *st);
/* Release buffers beyond a small size after a job. */
void py_stream_trim(struct stream *st);
/* The job's raw facts from EXITED, the streams and the report. Pointers
 * in raw point into s (valid until the slot's next job). */
void py_collect(struct fr_runtime *rt, struct pyslot *s, struct fr_raw *raw, char *msg, size_t msglen);

#endif
