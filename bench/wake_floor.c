/* wake_floor — what one sleep and wake-up costs a dispatcher on this
 * machine, the floor under fitrun's launcher CPU per prediction.
 *
 *   build/bench/wake_floor [-w WORKERS] [-s SPIN_US] [-n MESSAGES] [-r ROUNDS]
 *
 * A dispatcher process and WORKERS worker processes, each on a
 * SOCK_SEQPACKET socketpair (what fitrun's python runtime uses for RUN and
 * EXITED). A worker answers each 8-byte message after SPIN_US of its own
 * CPU (default 1600: an ARC prediction under isolation = reuse). The
 * dispatcher does nothing else: it sends the next message for each answer.
 * Two ways, alternating every round (interleaved: background load hits
 * both alike):
 *   event    one message in flight per worker; the dispatcher sleeps in
 *            epoll_wait until an answer comes (fitrun's loop today: one
 *            sleep and wake per prediction);
 *   batched  DEPTH messages queued per worker; after each wake-up the
 *            dispatcher takes every answer there is, refills, and sleeps
 *            BATCH_US before it waits again (a pipelined protocol).
 * It prints, per message and as medians over rounds, the dispatcher's own
 * CPU (CLOCK_THREAD_CPUTIME_ID), its wake-ups, and the messages per
 * second against the workers' bound (WORKERS / SPIN_US); and first, what
 * the cheapest system call costs here (getppid in a loop): a dispatcher
 * that makes S system calls per message spends at least S times that. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 64
#define DEPTH 3
#define BATCH_US 2000

struct run {
    double cpu_us;  /* dispatcher CPU per message */
    double wakes;   /* epoll_wait returns per message */
    double per_sec; /* messages per second */
};

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) < 0) {
        perror("wake_floor: clock_gettime");
        exit(1);
    }
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "wake_floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* A worker: answer each message after spin_us of CPU; EOF ends it. */
static void worker(int fd, long spin_us)
{
    char buf[8];
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r <= 0)
            _exit(r == 0 ? 0 : 1);
        uint64_t until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + (uint64_t)spin_us * 1000u;
        while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
            ;
        if (send(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf)
            _exit(1);
    }
}

static void send_one(int fd)
{
    char buf[8] = "RUN";
    if (send(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf)
        die("send");
}

/* n messages through the workers; depth in flight per worker. */
static struct run dispatch(const int *fds, int nw, long n, int depth, long batch_us)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        die("epoll_create1");
    for (int i = 0; i < nw; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) < 0)
            die("epoll_ctl");
    }
    long sent = 0, done = 0, wakes = 0;
    uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w0 = clock_ns(CLOCK_MONOTONIC);
    for (int d = 0; d < depth; d++)
        for (int i = 0; i < nw && sent < n; i++, sent++)
            send_one(fds[i]);
    struct epoll_event evs[MAX_WORKERS];
    while (done < n) {
        int k = epoll_wait(ep, evs, MAX_WORKERS, -1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            die("epoll_wait");
        wakes++;
        for (int j = 0; j < k; j++) {
            int fd = fds[evs[j].data.u32];
            char buf[8];
            while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) == (ssize_t)sizeof buf) {
                done++;
                if (sent < n) {
                    send_one(fd);
                    sent++;
                }
            }
        }
        if (batch_us) {
            struct timespec ts = {0, batch_us * 1000};
            while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        }
    }
    uint64_t c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w1 = clock_ns(CLOCK_MONOTONIC);
    close(ep);
    return (struct run){(double)(c1 - c0) / 1000.0 / (double)n, (double)wakes / (double)n,
                        (double)n * 1e9 / (double)(w1 - w0)};
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median over rounds of 100,000 getppid calls, in µs per call: the
 * floor of any system call on this machine (a guest whose kernel runs
 * under a paravirtual switcher pays several times a bare machine's). */
static double syscall_floor_us(int rounds)
{
    enum { CALLS = 100000 };
    double us[99];
    for (int r = 0; r < rounds; r++) {
        uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
        for (int i = 0; i < CALLS; i++)
            (void)syscall(SYS_getppid); /* through syscall(2): libc caches nothing of it */
        us[r] = (double)(clock_ns(CLOCK_MONOTONIC) - t0) / 1e3 / CALLS;
    }
    return median(us, rounds);
}

int main(int argc, char **argv)
{
    int nw = 2, rounds = 5;
    long spin_us = 1600, n = 2000;
    int c;
    while ((c = getopt(argc, argv, "w:s:n:r:")) != -1) {
        switch (c) {
        case 'w': nw = atoi(optarg); break;
        case 's': spin_us = atol(optarg); break;
        case 'n': n = atol(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        default: fprintf(stderr, "usage: wake_floor [-w WORKERS] [-s SPIN_US] [-n MESSAGES] [-r ROUNDS]\n"); return 2;
        }
    }
    if (nw < 1 || nw > MAX_WORKERS || spin_us < 0 || n < 1 || rounds < 1 || rounds > 99) {
        fprintf(stderr, "wake_floor: 1-%d workers, SPIN_US >= 0, MESSAGES >= 1, 1-99 rounds\n", MAX_WORKERS);
        return 2;
    }
    printf("one system call (getppid, median of %d x 100,000): %.3f us\n", rounds, syscall_floor_us(rounds));
    fflush(stdout); /* before the workers fork: none holds a copy to print */
    int fds[MAX_WORKERS];
    pid_t pids[MAX_WORKERS];
    for (int i = 0; i < nw; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
            die("socketpair");
        pids[i] = fork();
        if (pids[i] < 0)
            die("fork");
        if (pids[i] == 0) {
            for (int j = 0; j < i; j++)
                close(fds[j]); /* earlier workers' ends: their EOF must come */
            close(sv[0]);
            worker(sv[1], spin_us);
        }
        close(sv[1]);
        fds[i] = sv[0];
    }
    double cpu[2][99], wakes[2][99], rate[2][99];
    const char *names[2] = {"event", "batched"};
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 2; k++) {
            int m = (r + k) % 2; /* alternate which goes first */
            struct run x = m ? dispatch(fds, nw, n, DEPTH, BATCH_US) : dispatch(fds, nw, n, 1, 0);
            cpu[m][r] = x.cpu_us;
            wakes[m][r] = x.wakes;
            rate[m][r] = x.per_sec;
            printf("round %d %-7s dispatcher %6.2f us/message  %.2f wake-ups/message  %7.0f messages/s\n", r + 1,
                   names[m], x.cpu_us, x.wakes, x.per_sec);
        }
    double bound = spin_us ? nw * 1e6 / (double)spin_us : 0;
    double med[2];
    for (int m = 0; m < 2; m++) {
        med[m] = median(cpu[m], rounds);
        printf("median  %-7s dispatcher %6.2f us/message  %.2f wake-ups/message  %7.0f messages/s", names[m], med[m],
               median(wakes[m], rounds), median(rate[m], rounds));
        if (bound)
            printf("  (workers' bound %.0f/s)", bound);
        printf("\n");
    }
    printf("batched/event dispatcher CPU: %.2f\n", med[1] / med[0]);
    for (int i = 0; i < nw; i++)
        close(fds[i]);
    int failed = 0;
    for (int i = 0; i < nw; i++) {
        int st;
        if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed = 1;
    }
    if (failed)
        fprintf(stderr, "wake_floor: a worker failed\n");
    return failed;
}
