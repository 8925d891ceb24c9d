/* fitrun/sandbox.h — isolate one untrusted job in a freshly forked child.
 *
 * Prepare once, apply cheaply: fr_policy_build() resolves syscall names,
 * compiles the seccomp filter to BPF and builds the Landlock ruleset in the
 * parent; fr_policy_apply() runs in the forked child and only makes
 * syscalls (rlimits, no_new_privs, capability drop, identity, Landlock,
 * seccomp) — no allocation, no file access — so it is also safe in a child
 * forked from a multithreaded or Python parent.
 *
 * This header is the contract used by the launcher's runtimes and, through
 * libfitrun_sandbox.so + ctypes, by the warm Python runtime.
 *
 * Kernel behaviours that matter (measured in docs/sandbox.md):
 *  - Before Linux 5.16, installing a seccomp filter also forces the SSBD
 *    (and, with it, STIBP) Spectre mitigations on the process unless the
 *    filter is installed with SECCOMP_FILTER_FLAG_SPEC_ALLOW — a large
 *    slowdown for CPU-bound code. spec_allow sets that flag: faster on old
 *    kernels, at the price of leaving the job exposed to (and able to
 *    mount) speculative store-bypass attacks. Off by default; 5.16+ no
 *    longer ties the mitigation to seccomp, so it changes nothing there.
 *  - RLIMIT_NPROC counts all processes of the job's real uid, system-wide,
 *    and is not enforced for uid 0: it is a per-job process cap only when
 *    each slot runs under its own uid (identity, below).
 *  - RLIMIT_AS limits reserved address space: allocators and runtimes that
 *    reserve large ranges (Go, the JVM, ASan, glibc's 64 MiB per-thread
 *    arenas) fail well below the memory they actually use.
 *  - Violations: every filter answers a denied call with
 *    SECCOMP_RET_USER_NOTIF. The notification is read from the filter's
 *    listener by a supervisor the job cannot reach (the relay process, or
 *    the caller itself with fr_policy_apply_notify), so a job can neither
 *    forge nor hide one. A SIGSYS the job raises itself is just a signal.
 */
#ifndef FITRUN_SANDBOX_H
#define FITRUN_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

enum fr_preset { FR_PRESET_NONE = 0, FR_PRESET_EXEC, FR_PRESET_PYTHON };

/* What a job may read besides the spec's read_paths (Landlock; docs/sandbox.md
 * lists and justifies every path):
 *   FR_FS_OFF     no Landlock at all: the job reads what its uid may read
 *   FR_FS_LIBS    shared-library directories, the loader cache, time zones,
 *                 CPU topology, /dev/null (also writable), /dev/zero,
 *                 /dev/urandom — what a running interpreter still loads; the
 *                 interpreter's own tree comes from read_paths
 *   FR_FS_SYSTEM  FR_FS_LIBS + /usr, /bin, /sbin and the few /etc files
 *                 programs read at start-up (exec jobs) */
enum fr_fs_base { FR_FS_OFF = 0, FR_FS_LIBS, FR_FS_SYSTEM };
#define FR_UID_BASE_DEFAULT 60000u
#define FR_SLOTS_DEFAULT 4096

/* A violation made through a foreign system-call ABI (i386 int 0x80, x32):
 * fr_report_read / fr_notify_read return it, fr_syscall_name names it
 * "foreign_abi". */
#define FR_VIOLATION_FOREIGN 0x7fff0000

/* 0 in a limit field = "leave as inherited"; core is always set to 0
 * unless core_bytes is set (documented default: no core files). */
struct fr_policy_spec {
    enum fr_preset preset;
    uint64_t cpu_ms;              /* RLIMIT_CPU (rounded up to whole seconds; soft, hard = soft+1) */
    uint64_t as_bytes;            /* RLIMIT_AS */
    uint64_t fsize_bytes;         /* RLIMIT_FSIZE */
    uint64_t nofile;              /* RLIMIT_NOFILE */
    uint64_t nproc;               /* RLIMIT_NPROC (per user! see docs) */
    uint64_t stack_bytes;         /* RLIMIT_STACK */
    uint64_t core_bytes;          /* RLIMIT_CORE, default 0 */
    const char *const *allow;     /* NULL-terminated syscall names added to the preset */
    const char *const *deny;      /* NULL-terminated syscall names removed from it */
    const char *const *keep_caps; /* NULL-terminated capability names ("cap_net_raw") */
    bool spec_allow;              /* SECCOMP_FILTER_FLAG_SPEC_ALLOW */

    /* Least privilege. All zero = no Landlock, identity unchanged. */
    enum fr_fs_base fs;             /* Landlock: what a job may read besides read_paths */
    const char *const *read_paths;  /* NULL-terminated absolute paths: readable (and executable) */
    const char *const *write_paths; /* NULL-terminated absolute paths: writable (and readable) */
    bool require_landlock;          /* fs != FR_FS_OFF and no Landlock: fr_policy_build fails */
    bool slot_identity;             /* under root, slot k runs as uid = gid = uid_base + k, no groups */
    uint32_t uid_base;              /* first per-slot uid/gid (default FR_UID_BASE_DEFAULT when 0) */
    int slots;                      /* slots the caller will use (0 = FR_SLOTS_DEFAULT): uid_base..+slots-1
                                   must exist in the user namespace, and apply refuses slot >= slots */
};

/* RLIMIT_CPU (and a python child's ITIMER_PROF) for a job whose CPU
 * budget fitrun's pool enforces itself, by the job's own clocks: the
 * budget plus max(20%, 200 ms), at most FR_DURATION_MAX_MS; 0 for none.
 * The kernel counts RLIMIT_CPU in scheduler ticks, which run ahead of the
 * real CPU time when jobs share a CPU (20% measured); at the budget itself
 * it would stop a job early, as a signal. So the kernel's limit is the
 * backstop, and the pool's kill at the budget comes first. */
uint64_t fr_cpu_backstop_ms(uint64_t budget_ms);

struct fr_policy; /* opaque; immutable once built */

/* Build (and compile) a policy. Returns 0, or -1 with a message in err
 * naming the culprit (e.g. "unknown syscall 'sockett' in allow"). Turning
 * a profile's [sandbox] section into a spec is the launcher's business
 * (fitrun/sandbox_keys.h): this library parses no text. */
int fr_policy_build(const struct fr_policy_spec *spec, struct fr_policy **out, char *err, size_t errlen);
/* What fr_policy_build checks of spec's lists without the kernel: the read
 * and write paths (absolute; existing unless optional) and the allow and
 * deny names (none in both, none the sandbox needs denied, allow only
 * with a preset's filter). A caller that
 * knows where each list came from checks first, to say so: 0, or -1 with
 * err and *key (optional), the list at fault ("read", "write", "allow",
 * "deny"). */
int fr_policy_check_lists(const struct fr_policy_spec *spec, const char **key, char *err, size_t errlen);
void fr_policy_free(struct fr_policy *p);

/* In the child, after fork and before exec/running the job. report_fd is a
 * pre-opened descriptor on which a violation record is written (may be -1).
 * Async-signal-safe. Returns 0 or -errno of the first failing step.
 * The same as fr_policy_apply_slot(p, report_fd, -1): identity unchanged.
 *
 * Notes for callers (docs/sandbox.md has the details):
 *  - call it last, right before execve/the job: the filter denies most of
 *    what set-up code uses (setpgid, dup2 is fine, pipe, ...).
 *  - the child must own its memory (fork/_Fork, not vfork/CLONE_VM).
 *  - report_fd: the write end of a pipe; the parent closes its copy of the
 *    write end after fork and reads with fr_report_read after the child
 *    has been reaped.
 *  - report_fd >= 0 (any preset): the calling process becomes a relay that
 *    never returns; the job runs in a new child of it, in which this call
 *    returns 0. The relay leads its own process group (setpgid(0, 0) if it
 *    did not already), holds the filter's listener, names violations on
 *    report_fd, mirrors the job's exit status or fatal signal (so the
 *    caller's wait4 sees the job; getpid() in the job is not the pid the
 *    caller forked), hands the job the caller's interval timers, and kills
 *    the whole process group when its own parent dies. The job's copy of
 *    report_fd is closed: only the relay can write a record.
 *  - report_fd < 0: in-process, violations kill with an unnamed SIGSYS.
 *  - on failure the caller should _exit (e.g. 125) without running the job. */
int fr_policy_apply(const struct fr_policy *p, int report_fd);

/* Parent side: read the child's report (non-blocking is fine) after it has
 * exited. Returns the violating syscall number (FR_VIOLATION_FOREIGN for a
 * foreign ABI), or -1 if none was reported. Only the relay writes it. */
int fr_report_read(int report_fd);

/* With identity: slot k (0-based) runs the job as uid = gid = uid_base + k,
 * supplementary groups dropped, when the policy has slot_identity and the
 * builder was root; slot -1 = keep the caller's identity. Otherwise as
 * fr_policy_apply. */
int fr_policy_apply_slot(const struct fr_policy *p, int report_fd, int slot);

/* Parent side, before building a policy with slot_identity under root:
 * reserve `n` consecutive uids (= gids) from `want` upward that no other
 * live fitrun run has reserved and no process uses as its real uid, so that
 * runs never share a uid (RLIMIT_NPROC and signals are per uid). The
 * reservation lasts until this process exits (a registry in /run/fitrun,
 * or /tmp/.fitrun-ids, under a lock, and an OFD lock on the range's bytes
 * of uids.lock there, held to the end: what tells runs in other pid
 * namespaces that it is alive). *got = the first uid. Returns 0, or -1
 * with a message in err. */
int fr_identity_reserve(uint32_t want, int n, uint32_t *got, char *err, size_t errlen);

/* In-process application for a caller that supervises the job itself (the
 * warm Python worker is the parent of each prediction's child):
 *
 *   worker (supervisor)                      child (fork of the worker)
 *   socketpair(AF_UNIX, SOCK_SEQPACKET) = s
 *   fork() ------------------------------->  close(s[0])
 *   close(s[1])                              ... its own set-up ...
 *                                            fr_policy_apply_notify(p, s[1], slot)
 *   L = fr_notify_receive(s[0])  <---------  (filter installed with a listener,
 *                                             L sent with SCM_RIGHTS, then its
 *                                             copy of L and s[1] closed)
 *   poll(L) with the child's pipes/pidfd     the prediction runs
 *   L readable: fr_notify_read(L, &nr, &pid)
 *     -> violation nr; SIGKILL the child     (its denied call never returns)
 *   after wait4: close(L)
 *
 * The child never holds the listener while untrusted code runs, so it can
 * neither forge a notification nor answer its own. Call it last (as
 * fr_policy_apply); async-signal-safe. notify_sock must be >= 0. Returns 0 or
 * -errno; on failure the child should _exit without running the job (the
 * supervisor's fr_notify_receive then returns -EPIPE).
 * If the supervisor dies, the kernel answers pending and later denied calls
 * with ENOSYS (they do not run) until the child's own PR_SET_PDEATHSIG, if
 * the caller armed one (apply re-arms it after an identity change), kills it. */
int fr_policy_apply_notify(const struct fr_policy *p, int notify_sock, int slot);
/* The descriptor the child needs until apply (the prepared Landlock
 * ruleset, O_CLOEXEC; apply closes it), or -1. A caller that closes
 * inherited descriptors in the child before apply must keep this one. */
int fr_policy_fd(const struct fr_policy *p);
/* Supervisor: the listener the child sent (blocking until it sends or
 * dies). Returns the descriptor (O_CLOEXEC), -ENODATA when the policy has
 * no filter (nothing to supervise), -EPIPE when the child closed the socket
 * without sending (apply failed, or it died), or another -errno. */
int fr_notify_receive(int notify_sock);
/* Supervisor: read one notification (blocks until there is one: poll the
 * listener first). Returns 0 with *nr = the denied syscall (or
 * FR_VIOLATION_FOREIGN) and *pid = the calling thread, or -errno (-ENOENT:
 * the caller died before it could be read). The calling thread stays
 * blocked until the supervisor kills it: never answer, never close the
 * listener while the job lives. */
int fr_notify_read(int listener, int *nr, int *pid);

/* A spec as one self-contained byte string, lists included, so that another
 * process can build the same policy: fitrun packs the spec of a python run
 * and the warm interpreter builds it through ctypes, adding its own tree
 * to the read paths (only it knows where that is). The format is private
 * to this library (native byte order: both ends run on the same machine)
 * and versioned. Returns the length the packed spec needs; it was written
 * to buf only if that is <= len. -1 with errno = EINVAL for a spec that
 * cannot be packed (more than 65535 names in a list). */
long fr_policy_spec_pack(const struct fr_policy_spec *spec, void *buf, size_t len);
/* fr_policy_build from a packed spec, with more_read (NULL-terminated, may
 * be NULL) added to its read paths. A malformed or foreign byte string is
 * an error ("sandbox: packed spec: ..."). */
int fr_policy_build_packed(const void *packed, size_t len, const char *const *more_read, struct fr_policy **out,
                           char *err, size_t errlen);

/* What a policy will enforce, and why not where it will not (fitrun
 * detect, the run's one-time notes). Strings are "" when not applicable. */
struct fr_policy_info {
    enum fr_preset preset;
    const char *seccomp; /* "off" or "notify" */
    unsigned filter_insns;
    bool spec_allow;
    enum fr_fs_base fs;
    int landlock_abi;        /* of the running kernel; 0 = none */
    bool landlock;           /* a ruleset is prepared and will be enforced */
    char landlock_why[200];  /* fs != off and !landlock: why */
    const char *write_opens; /* "landlock" (Landlock rules writes and truncation),
                                       "landlock, no O_TRUNC" (ABI 1-2), "denied" (seccomp: read-only opens),
                                       "allowed" (no filter, no Landlock) */
    bool scoped;             /* ABI >= 6: signals and abstract unix sockets stay in the job */
    unsigned nread, nwrite;  /* paths in the ruleset (base set included) */
    bool processes;          /* a job may create processes: no seccomp filter, the exec preset
                                       with processes != 1, or fork/vfork/clone/clone3 in allow */
    bool identity;           /* jobs switch to per-slot uids */
    uint32_t uid_first, uid_last;
    char identity_why[200]; /* !identity: why ("user = root", "fitrun is not root (uid 1000)", ...) */
    unsigned uid;           /* the builder's euid */
    uint64_t keep_caps;     /* bit n = capability n is kept */
    bool bounding;          /* the builder may drop the bounding set (CAP_SETPCAP) */
};
void fr_policy_info(const struct fr_policy *p, struct fr_policy_info *out);
/* The path a policy's ruleset lets a job read (true) — resolved with
 * realpath; false when Landlock is not enforced (then: whatever DAC says).
 * For warnings such as "the jobs file is readable by jobs". */
bool fr_policy_may_read(const struct fr_policy *p, const char *path);
/* The running kernel's Landlock ABI (> 0), or 0 with *err = the errno that
 * says why not (ENOSYS, EOPNOTSUPP, EPERM). Probed once per process. */
int fr_landlock_abi(int *err);

/* ---- fork isolation's worker (the warm Python runtime) ---- */

/* What a child of fr_worker_serve holds when the call returns 1 in it. */
struct fr_worker_child {
    char *job; /* the job's bytes as fitrun framed them (malloc'd: fr_worker_child_free) */
    size_t job_len;
    char error[160]; /* reading the job failed: why ("" when it was read) */
};

struct fr_worker_config {
    int chan;              /* the worker's channel (SOCK_SEQPACKET; fitrun/pyproto.h) */
    int status;            /* its status socket (STARTED) */
    int null_fd;           /* /dev/null, read-write: every child's fd 0 */
    const int *cgroup_fds; /* the slot's cgroup.procs files: every child joins them first */
    int ncgroups;
    const struct fr_policy *policy; /* what each child applies as `slot` (the caller, once the call
                                       returned: fr_policy_apply_notify on FR_PY_CHILD_NOTIFY_FD);
                                       NULL: none (the worker supervises nothing) */
    int slot;
    uint64_t backstop_ms; /* each child's ITIMER_PROF (its CPU backstop); 0 = none */
    /* The interpreter's own fork work, what os.fork() runs around fork(),
     * or NULL: before_fork in the worker (PyOS_BeforeFork: its before-fork
     * handlers, its import lock taken), after_fork_parent in the worker
     * (PyOS_AfterFork_Parent), after_fork in each child once it joined its
     * cgroups (PyOS_AfterFork_Child: its at-fork handlers, its locks made
     * anew). */
    void (*before_fork)(void);
    void (*after_fork_parent)(void);
    void (*after_fork)(void);
};

/* Serve the worker's channel (docs/python-runtime.md, "Channel messages"):
 * PIPES once, then for each RUN fork a child, send STARTED with its pidfd,
 * supervise it (the seccomp listener it sends once it applied the policy;
 * a denied call kills it), kill its process group, reap it and send
 * EXITED. A bad message gets FAILED. Returns 0 when fitrun closed the
 * channel (or went away), -1 with errno when the channel itself fails;
 * and 1 in each child, whose descriptors are then 0 null_fd, 1 stdout, 2
 * stderr, 3 report (blocking, flags 0), FR_PY_CHILD_NOTIFY_FD its socket
 * and the policy's own (fr_policy_fd): everything else is closed. The
 * child is in its slot's cgroups and its own process group, dies with the
 * worker, has read its job into *child and armed its backstop; the caller
 * applies the policy before any of the job's code runs, then exits. With
 * an interpreter, call it with the interpreter's lock held (ctypes'
 * PyDLL): its fork work needs this thread's state. */
int fr_worker_serve(const struct fr_worker_config *cfg, struct fr_worker_child *child);
void fr_worker_child_free(struct fr_worker_child *child);

/* ---- workers, descriptions, names ---- */

/* Optional, for a long-lived process that only forks jobs (a warm Python
 * worker): drop the capability bounding set (except kept capabilities) in
 * the CALLING process once, so that each fr_policy_apply skips ~40 prctl
 * calls (about a third of its cost for uid 0). Irreversible for the caller;
 * its effective/permitted capabilities are untouched. Returns 0 or -errno. */
int fr_policy_prepare_worker(struct fr_policy *p);

/* One line for logs and `describe`: "preset=python seccomp=notify(301 insns)
 * spec_allow=no cpu=2s(hard 3s) as=1.0 GiB core=0 caps=none landlock=libs(abi 7)
 * uids=60000-60003". Returns the
 * length it needed (snprintf-style), or -1. */
int fr_policy_describe(const struct fr_policy *p, char *buf, size_t len);
/* The compiled seccomp program (struct sock_filter[], 8 bytes each) as the
 * parent holds it — kill/tkill/tgkill compare against a pid placeholder and
 * sendmsg against a descriptor placeholder, which the child patches. NULL
 * with *ninsns = 0 when the policy has no filter. */
const void *fr_policy_bpf(const struct fr_policy *p, size_t *ninsns);
/* Names: "socket" (libseccomp, native arch; "unknown" for nr < 0,
 * "foreign_abi" for FR_VIOLATION_FOREIGN, "syscall_<nr>" if unnamed) and
 * "SIGSEGV" / "SIGRTMIN+3". Return buf. */
const char *fr_syscall_name(int nr, char *buf, size_t n);
const char *fr_signal_name(int sig, char *buf, size_t n);

/* For the warm Python runtime's state check (isolation = reuse): copy the
 * 8-byte word at each of addrs[0..n) into out[i]. Every address must point
 * at memory that stays valid for the call. */
void fr_peek_words(const uint64_t *const *addrs, uint64_t *out, size_t n);
/* The first i in [0, n) whose word at addrs[i] is not want[i], or n when
 * every one is. */
size_t fr_peek_differs(const uint64_t *const *addrs, const uint64_t *want, size_t n);

/* The same for arrays: for each object at objs[0..n), the 8-byte count at
 * objs[i] + count_at, then (count + add) * mult words of the array whose
 * address is the word at objs[i] + items_at (a CPython list: ob_size and
 * ob_item, add 0, mult 1; a set: its mask and table, add 1, mult 2),
 * appended to out, and the rest of out[0..cap) zeroed. Returns how many
 * words that is; where it is more than cap, out holds only what fit and
 * no word past cap is read. */
size_t fr_peek_arrays(const unsigned char *const *objs, size_t n, size_t count_at, size_t items_at, uint64_t add,
                      uint64_t mult, uint64_t *out, size_t cap);

/* Names of the enums above: "none", "exec", "python" and "off", "libs",
 * "system"; parse returns 0 or -1 (unknown name). */
int fr_preset_parse(const char *s, enum fr_preset *out);
const char *fr_preset_name(enum fr_preset p);
int fr_fs_base_parse(const char *s, enum fr_fs_base *out);
const char *fr_fs_base_name(enum fr_fs_base fs);

#endif
