/* landlock.c — file-system confinement with Landlock: the ruleset is built
 * once in the parent (one descriptor), each child only restricts itself.
 *
 * Rights. The ruleset handles every file-system right the running kernel
 * knows (ABI 1: execute, read/write files, read dirs, remove, make-*;
 * ABI 2: refer; ABI 3: truncate; ABI 5: ioctl on devices), so anything not
 * granted below is denied. A path gets:
 *   read   READ_FILE, READ_DIR, EXECUTE — executing a readable file gives
 *          nothing reading it does not (an interpreter or the loader can
 *          run it), and exec jobs must run /usr/bin.
 *   write  read + WRITE_FILE, TRUNCATE, MAKE_{REG,DIR,SYM,FIFO,SOCK},
 *          REMOVE_{FILE,DIR}, REFER (moves inside writable trees). Never
 *          MAKE_CHAR/MAKE_BLOCK (device nodes).
 *   /dev/null read + write + truncate; /dev/zero and /dev/urandom read;
 *          all three IOCTL_DEV (their ioctls change nothing, and isatty()
 *          on them then answers ENOTTY as everywhere else).
 * A rule on a file (not a directory) keeps only the file rights.
 *
 * Scopes (ABI >= 6): LANDLOCK_SCOPE_SIGNAL (the job signals only processes
 * of its own Landlock domain: not fitrun, not its relay, not other jobs,
 * whatever their uid) and LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (no
 * connecting to host daemons' abstract sockets when a profile allows
 * sockets). Both are free and only ever narrow what the job can reach.
 *
 * Not handled: the TCP rights of ABI 4 (bind/connect by port). Networking
 * is the seccomp allow-list's business (socket is denied unless a profile
 * allows it); Landlock's rules only know TCP ports, not UDP, raw or unix
 * sockets nor destinations, so they could not say "no network" anyway.
 *
 * The base sets (fr_fs_base) and why each path is there: g_libs, g_system
 * below; docs/sandbox.md repeats them. Paths that do not exist on this
 * system are skipped; the profile's read/write paths must exist. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <linux/landlock.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

/* Rights newer than the build host's <linux/landlock.h> (Debian 12: 6.1). */
#define LL_TRUNCATE (1ULL << 14)
#define LL_IOCTL_DEV (1ULL << 15)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

static const char *const g_fs_names[] = {[FR_FS_OFF] = "off", [FR_FS_LIBS] = "libs", [FR_FS_SYSTEM] = "system"};

int fr_fs_base_parse(const char *s, enum fr_fs_base *out)
{
    for (size_t i = 0; s && i < sizeof g_fs_names / sizeof g_fs_names[0]; i++)
        if (!strcmp(s, g_fs_names[i])) {
            *out = (enum fr_fs_base)i;
            return 0;
        }
    return -1;
}

const char *fr_fs_base_name(enum fr_fs_base fs)
{
    if ((unsigned)fs < sizeof g_fs_names / sizeof g_fs_names[0])
        return g_fs_names[fs];
    return "unknown";
}

/* struct landlock_ruleset_attr as of ABI 6 (the kernel takes a size). */
struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

#define LL_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_EXECUTE)
#define LL_WRITE                                                                                                       \
    (LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LL_TRUNCATE | LANDLOCK_ACCESS_FS_MAKE_REG |                             \
     LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_MAKE_FIFO |                        \
     LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |                   \
     LANDLOCK_ACCESS_FS_REFER)
#define LL_FILE_RIGHTS                                                                                                 \
    (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | LL_TRUNCATE |         \
     LL_IOCTL_DEV)
#define LL_DEV_READ (LANDLOCK_ACCESS_FS_READ_FILE | LL_IOCTL_DEV)
#define LL_DEV_RW (LL_DEV_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LL_TRUNCATE)

struct ll_path {
    const char *path;
    uint64_t access;
};

/* FR_FS_LIBS: what an already running interpreter may still need.
 *   library dirs        the loader maps a lazily imported extension's .so
 *                       and its dependencies (numpy's BLAS, ctypes' libffi)
 *   /etc/ld.so.cache    the loader's index of those directories
 *   /etc/localtime, /usr/share/zoneinfo   time zones (time.localtime, zoneinfo)
 *   /sys/devices/system/cpu   CPU count and topology (glibc's get_nprocs
 *                       behind os.cpu_count/nproc, OpenBLAS, OpenMP)
 *   /proc/cpuinfo       the cpuinfo library (PyTorch, XNNPACK, oneDNN) parses
 *                       it on first use; it says what CPUID tells any process
 *                       and nothing about other processes. No other /proc
 *                       entry: not /proc/self (its inode is per process, a
 *                       rule built in the parent could not name the child's),
 *                       not other processes' cmdline, environ or fds
 *   /dev/null, /dev/zero, /dev/urandom */
static const struct ll_path g_libs[] = {
    {"/lib", LL_READ},
    {"/lib32", LL_READ},
    {"/lib64", LL_READ},
    {"/libx32", LL_READ},
    {"/usr/lib", LL_READ},
    {"/usr/lib32", LL_READ},
    {"/usr/lib64", LL_READ},
    {"/usr/libx32", LL_READ},
    {"/usr/local/lib", LL_READ},
    {"/etc/ld.so.cache", LL_READ},
    {"/etc/localtime", LL_READ},
    {"/usr/share/zoneinfo", LL_READ},
    {"/sys/devices/system/cpu", LL_READ},
    {"/proc/cpuinfo", LL_READ},
    {"/dev/null", LL_DEV_RW},
    {"/dev/zero", LL_DEV_READ},
    {"/dev/urandom", LL_DEV_READ},
};

/* FR_FS_SYSTEM adds, for exec jobs:
 *   /usr, /bin, /sbin   the programs and their data (share/, locale, terminfo,
 *                       magic...): the OS's read-only tree, no user data
 *   /etc/ld.so.preload  read by the loader before anything else, if present
 *   /etc/locale.alias   setlocale() (/usr/share/locale/locale.alias links here)
 *   /etc/python3*       Debian's python3 imports sitecustomize.py from here
 *                       (linked from /usr/lib/python3.X)
 * Nothing else of /etc: not passwd/group/nsswitch.conf (a slot's uid has no
 * entry anyway; `ls -l` then shows numbers), not hosts/resolv.conf/ssl
 * (networking profiles add them), never shadow, ssh keys or 0600 files.
 * Symlinks in /etc/alternatives need no rule: Landlock checks the file a
 * path resolves to, not the links on the way. */
static const struct ll_path g_system[] = {
    {"/usr", LL_READ},
    {"/bin", LL_READ},
    {"/sbin", LL_READ},
    {"/etc/ld.so.preload", LL_READ},
    {"/etc/locale.alias", LL_READ},
};
static const char g_system_glob[] = "/etc/python3*";

static long ll_create_ruleset(const struct ll_ruleset_attr *attr, size_t size, uint32_t flags)
{
    return syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

int fr_landlock_abi(int *err)
{
    static int cached_abi = -1, cached_err;
    if (cached_abi < 0) {
        long abi = ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        cached_abi = abi > 0 ? (int)abi : 0;
        cached_err = abi > 0 ? 0 : errno;
    }
    if (err)
        *err = cached_err;
    return cached_abi;
}

static uint64_t handled_for_abi(int abi)
{
    uint64_t fs = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
                  LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                  LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                  LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                  LANDLOCK_ACCESS_FS_MAKE_SYM;
    if (abi >= 2)
        fs |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        fs |= LL_TRUNCATE;
    if (abi >= 5)
        fs |= LL_IOCTL_DEV;
    return fs;
}

static const char *why_absent(int err)
{
    switch (err) {
    case ENOSYS:
        return "the kernel has no Landlock system calls (Linux < 5.13), or a seccomp profile (container "
               "runtime) answers them with ENOSYS";
    case EOPNOTSUPP:
        return "Landlock is built into the kernel but not enabled (add landlock to the lsm= boot parameter)";
    case EPERM: return "a seccomp profile (container runtime) denies the Landlock system calls";
    default: return strerror(err);
    }
}

/* Remember a granted (readable) path for fr_policy_may_read. */
static int remember(struct fr_landlock *ll, const char *path)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return 0; /* vanished since it was opened: nothing to remember */
    size_t n = 0;
    while (ll->granted && ll->granted[n])
        n++;
    char **g = realloc(ll->granted, (n + 2) * sizeof *g);
    if (!g)
        return -1;
    ll->granted = g;
    if (!(g[n] = strdup(real)))
        return -1;
    g[n + 1] = NULL;
    return 0;
}

/* Add one path-beneath rule. Returns 1 if added, 0 if the path does not
 * exist and may be skipped, -1 with err. */
static int add_path(struct fr_landlock *ll, const char *path, uint64_t access, bool must_exist, const char *what,
                    char *err, size_t errlen)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) {
        if (!must_exist && (errno == ENOENT || errno == ENOTDIR))
            return 0;
        fr_seterr(err, errlen, "%s path '%s': %s", what, path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        fr_seterr(err, errlen, "sandbox: %s path '%s': fstat: %s", what, path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        access &= LL_FILE_RIGHTS;
    struct landlock_path_beneath_attr pb = {.allowed_access = access & ll->handled_fs, .parent_fd = fd};
    long rc = syscall(SYS_landlock_add_rule, ll->fd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
    int saved = errno;
    close(fd);
    if (rc < 0) {
        fr_seterr(err, errlen, "sandbox: landlock_add_rule(%s path '%s'): %s", what, path, strerror(saved));
        return -1;
    }
    if (remember(ll, path) < 0) {
        fr_seterr(err, errlen, "sandbox: out of memory recording Landlock paths");
        return -1;
    }
    return 1;
}

static int add_base(struct fr_landlock *ll, const struct ll_path *set, size_t n, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        int r = add_path(ll, set[i].path, set[i].access, false, "base", err, errlen);
        if (r < 0)
            return -1;
        ll->nread += (unsigned)r;
    }
    return 0;
}

static int add_glob(struct fr_landlock *ll, const char *pattern, char *err, size_t errlen)
{
    glob_t g;
    int r = glob(pattern, GLOB_ONLYDIR, NULL, &g);
    if (r == GLOB_NOMATCH)
        return 0;
    if (r != 0) {
        fr_seterr(err, errlen, "sandbox: glob(%s) failed", pattern);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) {
        int a = add_path(ll, g.gl_pathv[i], LL_READ, false, "base", err, errlen);
        if (a < 0)
            rc = -1;
        else
            ll->nread += (unsigned)a;
    }
    globfree(&g);
    return rc;
}

/* "PATH?" is an optional path: skipped where it does not exist (a shipped
 * profile naming /etc/gai.conf still loads in a container without one).
 * Copies the path without the mark into buf; false when it does not fit. */
static bool plain_path(const char *in, char *buf, size_t n, bool *optional)
{
    size_t len = strlen(in);
    *optional = len > 1 && in[len - 1] == '?';
    if (*optional)
        len--;
    if (len >= n)
        return false;
    memcpy(buf, in, len);
    buf[len] = '\0';
    return true;
}

static int add_list(struct fr_landlock *ll, const char *const *paths, uint64_t access, const char *what,
                    unsigned *count, char *err, size_t errlen)
{
    for (size_t i = 0; paths && paths[i]; i++) {
        char path[PATH_MAX];
        bool optional;
        if (!plain_path(paths[i], path, sizeof path, &optional)) {
            fr_seterr(err, errlen, "%s path '%.64s...' is too long", what, paths[i]);
            return -1;
        }
        int r = add_path(ll, path, access, !optional, what, err, errlen);
        if (r < 0)
            return -1;
        *count += (unsigned)r;
    }
    return 0;
}

/* The profile's paths must be absolute and, unless marked optional, exist
 * even where Landlock cannot enforce them: a typo should not depend on the
 * kernel to be found. */
int fr_landlock_check_paths(const char *const *paths, const char *what, char *err, size_t errlen)
{
    for (size_t i = 0; paths && paths[i]; i++) {
        char path[PATH_MAX];
        bool optional;
        struct stat st;
        if (!plain_path(paths[i], path, sizeof path, &optional)) {
            fr_seterr(err, errlen, "%s path '%.64s...' is too long", what, paths[i]);
            return -1;
        }
        if (path[0] != '/') {
            fr_seterr(err, errlen, "%s path '%s' is not absolute", what, path);
            return -1;
        }
        if (stat(path, &st) < 0 && !(optional && (errno == ENOENT || errno == ENOTDIR))) {
            fr_seterr(err, errlen, "%s path '%s': %s", what, path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

int fr_landlock_build(const struct fr_policy_spec *spec, struct fr_landlock *out, char *err, size_t errlen)
{
    *out = (struct fr_landlock){.fd = -1};
    if (fr_landlock_check_paths(spec->read_paths, "read", err, errlen) < 0 ||
        fr_landlock_check_paths(spec->write_paths, "write", err, errlen) < 0)
        return -1;
    int why = 0;
    out->abi = fr_landlock_abi(&why);
    if (spec->fs == FR_FS_OFF)
        return 0;
    if (!out->abi) {
        fr_seterr(out->why, sizeof out->why, "%s", why_absent(why));
        if (spec->require_landlock) {
            fr_seterr(err, errlen, "require_landlock is set, but Landlock is not available: %s", out->why);
            return -1;
        }
        return 0;
    }
    out->handled_fs = handled_for_abi(out->abi);
    if (out->abi >= 6)
        out->scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
    struct ll_ruleset_attr attr = {.handled_access_fs = out->handled_fs, .scoped = out->scoped};
    size_t size = out->abi >= 6 ? sizeof attr : out->abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
    long fd = ll_create_ruleset(&attr, size, 0);
    if (fd < 0) {
        fr_seterr(err, errlen, "sandbox: landlock_create_ruleset (ABI %d): %s", out->abi, strerror(errno));
        return -1;
    }
    out->fd = (int)fd;
    int rc = add_base(out, g_libs, sizeof g_libs / sizeof g_libs[0], err, errlen);
    if (!rc && spec->fs == FR_FS_SYSTEM)
        rc = add_base(out, g_system, sizeof g_system / sizeof g_system[0], err, errlen);
    if (!rc && spec->fs == FR_FS_SYSTEM)
        rc = add_glob(out, g_system_glob, err, errlen);
    if (!rc)
        rc = add_list(out, spec->read_paths, LL_READ, "read", &out->nread, err, errlen);
    if (!rc)
        rc = add_list(out, spec->write_paths, LL_WRITE, "write", &out->nwrite, err, errlen);
    if (rc < 0) {
        fr_landlock_free(out);
        return -1;
    }
    return 0;
}

void fr_landlock_free(struct fr_landlock *ll)
{
    if (ll->fd >= 0)
        close(ll->fd);
    ll->fd = -1;
    for (size_t i = 0; ll->granted && ll->granted[i]; i++)
        free(ll->granted[i]);
    free(ll->granted);
    ll->granted = NULL;
}

int fr_landlock_apply(const struct fr_landlock *ll)
{
    if (ll->fd < 0)
        return 0;
    int rc = 0;
    if (syscall(SYS_landlock_restrict_self, ll->fd, 0) < 0)
        rc = -errno;
    /* The descriptor would let untrusted code add rules to the ruleset the
     * next job restricts itself with (the filter denies landlock_add_rule,
     * preset none does not): never let it reach the job. */
    close(ll->fd);
    return rc;
}
