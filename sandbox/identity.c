/* identity.c — each slot's jobs under their own unprivileged uid and gid.
 *
 * Under root, slot k runs its jobs as uid = gid = base + k (isolate's box
 * uids), with no supplementary groups. Separate uids are what make the
 * kernel's own per-user rules work for us:
 *  - RLIMIT_NPROC counts the processes of the real uid: with one uid per
 *    slot it is a per-job process cap (with one shared uid, `processes = 1`
 *    would make a second slot's execve fail, PF_NPROC_EXCEEDED);
 *  - kill(2) and ptrace(2) between different uids need capabilities the
 *    jobs do not have: slots cannot signal, trace or read each other;
 *  - DAC: root-owned 0600/0640 files (/etc/shadow, keys) are unreadable.
 *
 * Planned in the parent: enabled only when the builder's euid is 0, the
 * spec asks for it, uid/gid base .. base+slots-1 exist in this user
 * namespace (/proc/self/uid_map, gid_map: a rootless container maps a
 * limited range), and "/" is searchable by other users (a root of mode 0700,
 * as in some initramfs and chroot trees, would leave a slot's uid unable to
 * reach any file, its own command included). Otherwise the identity is kept
 * and `why` says why.
 *
 * Child side, in the order the kernel needs: setgroups (needs CAP_SETGID),
 * setresgid (CAP_SETGID), setresuid last (it drops CAP_SETUID/SETGID from
 * the effective set). With kept capabilities PR_SET_KEEPCAPS is set first,
 * so the permitted set survives the uid change and caps.c can raise the
 * kept ones again (effective and ambient are cleared by the switch). */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

/* Is [first, first + count) inside one extent of an id map? A missing map
 * (no user namespaces) means the identity mapping. */
static int id_range_mapped(const char *map_path, uint64_t first, uint64_t count)
{
    FILE *f = fopen(map_path, "re");
    if (!f)
        return errno == ENOENT ? 1 : -1;
    unsigned long long inside, outside, len;
    int ok = 0;
    while (fscanf(f, "%llu %llu %llu", &inside, &outside, &len) == 3)
        if (first >= inside && first + count <= inside + len)
            ok = 1;
    fclose(f);
    return ok;
}

int fr_identity_plan(const struct fr_policy_spec *spec, bool keep_caps, struct fr_identity_plan *out, char *err,
                     size_t errlen)
{
    *out = (struct fr_identity_plan){0};
    out->builder_uid = (unsigned)geteuid();
    out->base = spec->uid_base ? spec->uid_base : FR_UID_BASE_DEFAULT;
    out->slots = spec->slots > 0 ? spec->slots : FR_SLOTS_DEFAULT;
    out->keep_caps = keep_caps;
    if ((uint64_t)out->base + (uint64_t)out->slots > 0xfffffffeull) {
        fr_seterr(err, errlen, "sandbox: uid_base %u + %d slots passes the largest uid", out->base, out->slots);
        return -1;
    }
    if (!spec->slot_identity) {
        fr_seterr(out->why, sizeof out->why, "user = root: jobs keep fitrun's identity");
        return 0;
    }
    if (out->builder_uid != 0) {
        fr_seterr(out->why, sizeof out->why, "fitrun is not root (uid %u): jobs keep that uid", out->builder_uid);
        return 0;
    }
    int u = id_range_mapped("/proc/self/uid_map", out->base, (uint64_t)out->slots);
    int g = id_range_mapped("/proc/self/gid_map", out->base, (uint64_t)out->slots);
    if (u <= 0 || g <= 0) {
        fr_seterr(out->why, sizeof out->why,
                  u < 0 || g < 0 ? "cannot read /proc/self/uid_map or gid_map: jobs keep uid 0"
                                 : "uids/gids %u-%u are not mapped in this user namespace (/proc/self/uid_map): "
                                   "jobs keep uid 0; set uid_base to a mapped range",
                  out->base, out->base + (unsigned)out->slots - 1);
        return 0;
    }
    struct stat root;
    if (stat("/", &root) == 0 && !(root.st_mode & S_IXOTH)) {
        fr_seterr(out->why, sizeof out->why,
                  "/ has mode %04o: other users cannot reach any file, so jobs keep uid 0 (chmod o+x /)",
                  (unsigned)(root.st_mode & 07777));
        return 0;
    }
    out->enabled = true;
    return 0;
}

int fr_identity_apply(const struct fr_identity_plan *plan, int slot)
{
    if (!plan->enabled || slot < 0)
        return 0;
    if (slot >= plan->slots)
        return -ERANGE; /* outside the range checked against the id maps */
    uid_t id = (uid_t)(plan->base + (uint32_t)slot);
    if (plan->keep_caps && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
        return -errno;
    /* A user namespace whose setgroups is "deny" refuses this; fine as long
     * as there is no supplementary group to lose. */
    if (setgroups(0, NULL) < 0 && (errno != EPERM || getgroups(0, NULL) != 0))
        return -errno;
    if (setresgid(id, id, id) < 0 || setresuid(id, id, id) < 0)
        return -errno;
    return 0;
}
