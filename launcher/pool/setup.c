/* setup.c — the process state a run needs and gives back: an epoll set,
 * a signalfd for SIGCHLD, SIGINT, SIGTERM and SIGHUP, child subreaper,
 * not dumpable (the pool holds expected answers), the input, the slots
 * and queues, an open-file limit that fits the workers, the OOM counter. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

void fr_pool_stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
}

int pool_setup(struct fr_host *h, char *err, size_t errlen)
{
    h->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (h->epfd < 0) {
        snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
        return -1;
    }
    /* SIGCHLD must not be ignored (inherited SIG_IGN would auto-reap the
     * jobs and steal their exit status); SIGPIPE is ignored so a job that
     * closes its stdin early gives EPIPE, not a dead fitrun. */
    struct sigaction dfl = {.sa_handler = SIG_DFL}, ign = {.sa_handler = SIG_IGN};
    sigaction(SIGCHLD, &dfl, &h->old_chld);
    sigaction(SIGPIPE, &ign, &h->old_pipe);
    sigset_t set;
    fr_pool_stop_signals(&set);
    sigaddset(&set, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &set, &h->oldmask) < 0) {
        snprintf(err, errlen, "sigprocmask: %s", strerror(errno));
        return -1;
    }
    h->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint32_t)h->sigfd};
    if (h->sigfd < 0 || epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->sigfd, &ev) < 0) {
        snprintf(err, errlen, "signalfd: %s", strerror(errno));
        return -1;
    }
    int was = 0;
    prctl(PR_GET_CHILD_SUBREAPER, &was, 0, 0, 0);
    h->was_subreaper = was;
    h->reaper.keep = fr_cgroup_tree_janitor(h->o->cgroups);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        snprintf(err, errlen, "prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
        return -1;
    }
    /* The pool holds every job line, expected answers included. A job
     * without CAP_SYS_PTRACE (the sandbox drops it) cannot open
     * /proc/<fitrun>/{mem,fd,environ,...} of a non-dumpable process. */
    h->was_dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
        snprintf(err, errlen, "prctl(PR_SET_DUMPABLE): %s", strerror(errno));
        return -1;
    }
    /* Pipes and ttys are polled; epoll refuses regular files (EPERM). */
    input_init(&h->in, h->o->in_fd, h->o->in_name);
    ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = (uint32_t)h->o->in_fd};
    if (epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->o->in_fd, &ev) == 0) {
        h->in.pollable = h->in_watched = true;
    } else if (errno != EPERM) {
        snprintf(err, errlen, "cannot watch %s: %s", h->o->in_name, strerror(errno));
        return -1;
    }
    pool_results_setup(h);
    h->nslots = h->o->workers;
    /* Each running exec job holds about six descriptors here (pidfd, four
     * pipe ends, /dev/null shared); with hundreds of workers the usual soft
     * limit of 1024 is too low. Raise it just enough, never above the hard
     * limit (jobs inherit it unless [sandbox] nofile is set). */
    struct rlimit nofile;
    rlim_t need = (rlim_t)h->nslots * 8 + 64;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < need) {
        nofile.rlim_cur = need < nofile.rlim_max ? need : nofile.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &nofile) < 0)
            fr_warn("cannot raise the open-file limit to %llu: %s", (unsigned long long)need, strerror(errno));
    }
    h->slots = calloc((size_t)h->nslots, sizeof *h->slots);
    h->pending = calloc((size_t)h->nslots, sizeof *h->pending);
    h->retry = calloc((size_t)h->nslots, sizeof *h->retry);
    h->seen = fr_idset_new();
    if (!h->slots || !h->pending || !h->retry || !h->seen) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    h->ncpus = n > 0 ? n : 1;
    return 0;
}

/* The OOM-kill counter of our memory cgroup, located by detection
 * (cmd_run's, or our own when the caller has none), with its baseline. */
void pool_oom_setup(struct fr_host *h)
{
    /* Each job's own memory cgroup counts its OOM kills exactly. */
    if (fr_cgroup_tree_has(h->o->cgroups, FR_CG_MEMORY))
        return;
    const struct fr_resources *res = h->o->resources;
    struct fr_resources *own = NULL;
    if (!res) {
        struct fr_detect_opts dopts = {.sysroot = NULL};
        own = malloc(sizeof *own); /* ~15 KiB: not on the stack */
        if (!own) {
            pool_say(h, "out of memory detecting the memory cgroup; OOM kills are reported as signal");
            return;
        }
        fr_detect(&dopts, own);
        res = own;
    }
    char err[FR_OOM_PATH_MAX + 256];
    if (fr_oom_init(&h->oom, &res->cgroup[FR_CTL_MEMORY], NULL, err, sizeof err) < 0)
        pool_say(h, "%s; OOM kills are reported as signal", err);
    free(own);
}

void pool_teardown(struct fr_host *h)
{
    pool_drop_queued(h);
    for (int s = 0; s < h->nslots && h->slots; s++)
        fr_job_clear(&h->slots[s].job);
    pool_flush_results(h);
    free(h->outbuf);
    free(h->pending);
    free(h->retry);
    free(h->slots);
    free(h->watches);
    fr_idset_free(h->seen);
    input_free(&h->in);
    reaper_free(&h->reaper);
    stats_free(&h->stats);
    if (h->sigfd >= 0)
        close(h->sigfd);
    if (h->epfd >= 0)
        close(h->epfd);
    prctl(PR_SET_CHILD_SUBREAPER, h->was_subreaper, 0, 0, 0);
    if (h->was_dumpable > 0)
        prctl(PR_SET_DUMPABLE, h->was_dumpable, 0, 0, 0);
    sigprocmask(SIG_SETMASK, &h->oldmask, NULL);
    sigaction(SIGPIPE, &h->old_pipe, NULL);
    sigaction(SIGCHLD, &h->old_chld, NULL);
}
