/* fitrun/pyproto.h — the messages of the warm Python runtime's worker
 * channel (docs/python-runtime.md, "Channel messages"): one definition for
 * fitrun (launcher/runtime/python/channel.c) and for the fork-isolation
 * worker of the sandbox library (sandbox/worker.c); fitrun_runtime.py's
 * MSG_* structs are the same layouts. Native byte order, no padding: both
 * ends run on one machine. */
#ifndef FITRUN_PYPROTO_H
#define FITRUN_PYPROTO_H

/* RUN (fitrun -> worker): 'R', u8 flags, 2 pad, u32 seq; + FR_PY_RUN_FDS
 * descriptors, or none (the worker's own pipes). */
#define FR_PY_MSG_RUN_LEN 8
/* RUN's flags. FRESH (reuse): end the process that ran the slot's previous
 * job before this one. */
#define FR_PY_RUN_FRESH 1
/* PIPES (fitrun -> worker, once): 'P', 3 pad; + the child ends of the
 * worker's own pipes. */
#define FR_PY_MSG_PIPES_LEN 4
/* The descriptors of PIPES and of a RUN that has them, in order: the job's
 * read end, then the report, stdout and stderr write ends. */
#define FR_PY_RUN_FDS 4
/* STARTED (worker -> fitrun, on the status socket): 'S', 3 pad, u32 seq,
 * i32 pid, i64 cpu_base_ns; + the child's pidfd when the process is new. */
#define FR_PY_MSG_STARTED_LEN 20
/* EXITED (worker -> fitrun): 'E', u8 flags, 2 pad, u32 seq, i32 wstatus,
 * i32 violation_nr, i64 utime_us, stime_us, max_rss_kb, wall_us, fork_us;
 * then, reuse only, why its process was replaced (UTF-8). */
#define FR_PY_MSG_EXITED_LEN 56
/* EXITED's flags. APPLIED: the process applied the sandbox (its worker
 * received the filter's listener, or the word that there is no filter,
 * which the process sends only once every step succeeded). */
#define FR_PY_EXITED_APPLIED 1
/* FAILED (worker -> fitrun): 'F', 3 pad, u32 seq, then the reason (UTF-8,
 * at most FR_PY_FAILED_TEXT_MAX bytes). */
#define FR_PY_MSG_FAILED_MIN 8
#define FR_PY_FAILED_TEXT_MAX 1000

/* A prediction's descriptors: 0 /dev/null, 1 stdout, 2 stderr, the report,
 * its end of the socket its worker supervises it on (closed once the
 * sandbox is applied) and the job (closed once read). */
#define FR_PY_CHILD_REPORT_FD 3
#define FR_PY_CHILD_NOTIFY_FD 4
#define FR_PY_CHILD_JOB_FD 5
/* Exit statuses of a prediction's child that cannot run its code: its
 * descriptors, a prctl or its cgroups failed; its worker died before it
 * armed the death signal. */
#define FR_PY_EXIT_CHILD_SETUP 70
#define FR_PY_EXIT_ORPHANED 71

#endif
