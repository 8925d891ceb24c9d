/* slot.c — a worker slot's jobs in their cgroup: the job's first process
 * joins it, and the slot's counters are read around each job. This is
 * the per-job path, so it only uses descriptors the tree opened once:
 * one write(2) per hierarchy to join, and a few pread(2)s and write(2)s
 * per job (files.c says why not libcgroup here).
 *
 * Per job, one job at a time in a slot:
 *   begin  pids.max: the job's allowance on top of its predecessor's
 *          processes still leaving; oom_kill and CPU baselines; the peak restarted (v1
 *          memory.max_usage_in_bytes, v2 memory.peak from Linux 6.12),
 *          and its value then (what the cgroup held already: page cache
 *          of earlier jobs) kept as the baseline
 *   end    cgroup.kill (v2: anything of the job still alive), then the
 *          counters again: OOM kills in the job's cgroup (exact: no other
 *          process is in it), its peak above the baseline, its CPU.
 *          The OOM count only where it can change the verdict (a job that
 *          exited 0 had none that matters: FR_CG_END_NO_OOM) or is the next
 *          baseline and may have moved (not after a lone process that
 *          could not fork exited 0: nothing was killed); the CPU counter not at all where the runtime measures
 *          every process of a job itself, nor pids.max where no job can
 *          fork (fr_cgroup_tree_contained). Each is a pread(2) of a
 *          cgroup file, 0.7-1.4 us of the launcher's CPU here.
 *
 * The counters end read are the next job's baselines when nothing can
 * count in between: the caller says no process joins the slot's cgroups
 * before its next begin (fr_cgroup_slot_end's idle), and pids.current,
 * read last, says the cgroup holds no task now, not even a zombie (a
 * task leaves it when it is reaped). An empty cgroup runs nothing, so no
 * CPU time and no OOM kill is added to it, and nothing is left over for
 * pids.max: begin then only restarts the peak. (A task reaped the moment
 * it exits may still be running the last instructions of its exit, whose
 * CPU time is charged when it switches out: measured on the ARC corpus
 * and on exec jobs, it never moved the counter by a microsecond, the
 * unit of the CPU figure.) The peak's baseline is not carried over: what
 * the cgroup holds (page cache) can still shrink before the next job. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int fr_cgroup_slot_fds(const struct fr_cgroup_tree *t, int slot, int *fds, int max)
{
    if (!t || slot < 0 || slot >= t->nslots)
        return 0;
    const struct cg_slot *s = &t->slots[slot];
    int n = 0;
    for (int i = 0; i < s->nprocs && n < max; i++)
        fds[n++] = s->procs[i];
    return n;
}

int fr_cgroup_join(const int *fds, int n)
{
    /* "0" is the writer itself (v1 and v2). */
    for (int i = 0; i < n; i++) {
        ssize_t w;
        do
            w = write(fds[i], "0", 1);
        while (w < 0 && errno == EINTR);
        if (w != 1)
            return w < 0 ? -errno : -EIO;
    }
    return 0;
}

/* One counter: memory.oom_control / memory.events "oom_kill N",
 * cpuacct.usage "N" (ns), cpu.stat "usage_usec N". */
static bool read_oom(const struct cg_slot *s, uint64_t *v)
{
    char buf[1024];
    return s->events >= 0 && cg_fd_read(s->events, buf, sizeof buf) > 0 && cg_key_u64(buf, "oom_kill", v);
}

static bool read_cpu_us(const struct cg_slot *s, uint64_t *us)
{
    char buf[1024];
    if (s->cpu < 0 || cg_fd_read(s->cpu, buf, sizeof buf) <= 0)
        return false;
    if (!s->cpu_ns)
        return cg_key_u64(buf, "usage_usec", us);
    uint64_t ns;
    if (!cg_text_u64(buf, &ns))
        return false;
    *us = ns / 1000;
    return true;
}

static bool read_peak(const struct cg_slot *s, uint64_t *v)
{
    char buf[64];
    return s->peak >= 0 && cg_fd_read(s->peak, buf, sizeof buf) > 0 && cg_text_u64(buf, v);
}

static struct cg_slot *slot_of(struct fr_cgroup_tree *t, int slot)
{
    return t && slot >= 0 && slot < t->nslots ? &t->slots[slot] : NULL;
}

/* The previous job's processes that fitrun killed but has not reaped yet
 * (its reaper runs in the pool's loop) still count in pids.current: the
 * new job gets its whole allowance on top of those `left`, or its first
 * fork could fail (EAGAIN). A write only when that count changed. */
static void pids_allowance(struct cg_slot *s, uint64_t left)
{
    char num[32];
    if (s->pids_max < 0 || left == s->pids_left)
        return;
    snprintf(num, sizeof num, "%llu", (unsigned long long)(s->pids_base + left));
    if (cg_fd_write(s->pids_max, num) == 0)
        s->pids_left = left;
}

/* Tasks in the slot's cgroup now (pids.current; zombies count). */
static bool read_pids(const struct cg_slot *s, uint64_t *v)
{
    char buf[64];
    return s->pids_cur >= 0 && cg_fd_read(s->pids_cur, buf, sizeof buf) > 0 && cg_text_u64(buf, v);
}

void fr_cgroup_slot_begin(struct fr_cgroup_tree *t, int slot)
{
    struct cg_slot *s = slot_of(t, slot);
    if (!s)
        return;
    uint64_t left;
    if (s->idle) {
        /* The baselines are what the previous job's end read (slot.c's
         * head says why they still hold), and nothing is left over. */
        s->idle = false;
        pids_allowance(s, 0);
    } else {
        if (s->pids_max >= 0 && read_pids(s, &left))
            pids_allowance(s, left);
        s->oom0_ok = read_oom(s, &s->oom0);
        s->cpu0_ok = read_cpu_us(s, &s->cpu0);
    }
    s->peak0_ok = s->peak_reset && cg_fd_write(s->peak, "0") == 0 && read_peak(s, &s->peak0);
}

void fr_cgroup_slot_kill(struct fr_cgroup_tree *t, int slot)
{
    struct cg_slot *s = slot_of(t, slot);
    if (s && s->kill >= 0)
        (void)cg_fd_write(s->kill, "1");
}

bool fr_cgroup_slot_cpu_us(struct fr_cgroup_tree *t, int slot, uint64_t *us)
{
    const struct cg_slot *s = slot_of(t, slot);
    uint64_t now;
    if (!s || !s->cpu0_ok || !read_cpu_us(s, &now))
        return false;
    *us = now > s->cpu0 ? now - s->cpu0 : 0;
    return true;
}

void fr_cgroup_tree_contained(struct fr_cgroup_tree *t)
{
    for (int i = 0; t && i < t->nslots; i++) {
        struct cg_slot *s = &t->slots[i];
        if (s->cpu >= 0)
            close(s->cpu);
        s->cpu = -1;
        s->cpu0_ok = false;
        /* pids.max limits forks inside the cgroup, and no job forks; a
         * process that joins it is never refused. Its value stays. */
        if (s->pids_max >= 0)
            close(s->pids_max);
        s->pids_max = -1;
        s->contained = true;
    }
}

void fr_cgroup_slot_end(struct fr_cgroup_tree *t, int slot, unsigned how, struct fr_cgroup_usage *u)
{
    memset(u, 0, sizeof *u);
    u->oom_file = "";
    struct cg_slot *s = slot_of(t, slot);
    if (!s)
        return;
    bool idle = how & FR_CG_END_IDLE, count_oom = !(how & FR_CG_END_NO_OOM);
    s->idle = false;
    u->valid = true;
    uint64_t oom = 0, cpu = 0, v;
    /* An idle end reads it all the same: it is the next job's baseline,
     * unless it cannot have moved: the job was one process that could not
     * fork and exited 0, so nothing in the cgroup was killed since begin. */
    bool oom_same = idle && !count_oom && s->contained;
    bool oom_ok = oom_same ? s->oom0_ok : s->oom0_ok && (idle || count_oom) && read_oom(s, &oom);
    if (oom_same)
        oom = s->oom0;
    if (count_oom && oom_ok && oom > s->oom0)
        u->oom_kills = oom - s->oom0;
    /* No baseline (a v1 kernel before 4.13 has no oom_kill line): no count. */
    u->oom_file = s->events >= 0 && s->oom0_ok ? s->events_path : "";
    if (s->peak0_ok && read_peak(s, &v)) {
        u->has_peak = true;
        u->peak_bytes = v > s->peak0 ? v - s->peak0 : 0;
    }
    bool cpu_ok = s->cpu0_ok && read_cpu_us(s, &cpu);
    if (cpu_ok && cpu >= s->cpu0) {
        u->has_cpu = true;
        u->cpu_us = cpu - s->cpu0;
    }
    /* Every counter begin would read was read here, and the cgroup is
     * empty: they are the next job's baselines. */
    if (idle && (s->events < 0 || oom_ok) && (s->cpu < 0 || cpu_ok) && read_pids(s, &v) && v == 0) {
        s->idle = true;
        s->oom0 = oom;
        s->cpu0 = cpu;
    }
}
