/* test_sandbox_noalloc.c — fr_policy_apply must not allocate (it runs in a
 * child forked from a multithreaded or Python parent, where malloc's locks
 * may be held by a thread that no longer exists).
 *
 * This binary interposes malloc & co. (forwarding to glibc's __libc_*
 * entry points) and counts calls while armed. libcap and libseccomp are
 * shared libraries, so their calls come here too. Under AddressSanitizer
 * the allocator belongs to ASan and the test is skipped. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fitrun/sandbox.h"
#include "fitrun/sandbox_keys.h"

#if defined(__SANITIZE_ADDRESS__)
#define FR_NOALLOC_SKIP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FR_NOALLOC_SKIP 1
#endif
#endif

#ifndef FR_NOALLOC_SKIP
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

static volatile int g_armed;
static volatile int g_calls;

void *malloc(size_t n)
{
    if (g_armed)
        g_calls++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    if (g_armed)
        g_calls++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (g_armed)
        g_calls++;
    return __libc_realloc(p, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    if (g_armed)
        g_calls++;
    return __libc_memalign(align, n);
}

void free(void *p)
{
    if (g_armed && p)
        g_calls++;
    __libc_free(p);
}
#endif

enum how { PLAIN, SLOT0, NOTIFY };

/* Apply `kv` in a child with counting armed; the child reports the count.
 * how: fr_policy_apply with a report pipe (for a filter: the relay, and the
 * count is the job's), fr_policy_apply_slot(p, -1, 0) (with identity),
 * fr_policy_apply_notify (the listener hand-off). */
static int allocations_during(const char *kv, enum how how)
{
#ifdef FR_NOALLOC_SKIP
    (void)kv;
    (void)how;
    return 0;
#else
    char err[256];
    struct fr_policy *p;
    if (fr_sandbox_text_build(kv, NULL, &p, err, sizeof err) < 0)
        fail_msg("build %s: %s", kv, err);
    int out[2], rep[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    if (how == NOTIFY)
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rep), 0);
    else
        assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        g_calls = 0;
        g_armed = 1;
        int rc = how == NOTIFY  ? fr_policy_apply_notify(p, rep[1], -1)
                 : how == SLOT0 ? fr_policy_apply_slot(p, -1, 0)
                                : fr_policy_apply(p, rep[1]);
        g_armed = 0;
        int msg[2] = {rc, g_calls};
        (void)!write(out[1], msg, sizeof msg);
        _exit(0);
    }
    close(out[1]);
    close(rep[1]);
    int listener = how == NOTIFY ? fr_notify_receive(rep[0]) : -1;
    int msg[2] = {-1, -1};
    assert_int_equal(read(out[0], msg, sizeof msg), (ssize_t)sizeof msg);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    close(out[0]);
    close(rep[0]);
    if (listener >= 0)
        close(listener);
    fr_policy_free(p);
    assert_int_equal(msg[0], 0);
    return msg[1];
#endif
}

static int allocations_during_apply(const char *kv)
{
    return allocations_during(kv, PLAIN);
}

static void test_counter_works(void **state)
{
    (void)state;
#ifdef FR_NOALLOC_SKIP
    skip();
#else
    /* The interposition must actually see allocations, or the other
     * tests prove nothing. */
    g_calls = 0;
    g_armed = 1;
    char *volatile p = malloc(32);
    free(p);
    g_armed = 0;
    assert_int_equal(g_calls, 2);
#endif
}

static void test_python_apply_does_not_allocate(void **state)
{
    (void)state;
#ifdef FR_NOALLOC_SKIP
    skip();
#endif
    assert_int_equal(allocations_during_apply("preset=python;cpu_time=2s;memory=1G;nofile=64"), 0);
}

static void test_caps_and_none_do_not_allocate(void **state)
{
    (void)state;
#ifdef FR_NOALLOC_SKIP
    skip();
#endif
    assert_int_equal(allocations_during_apply("preset=none;keep_caps=cap_net_raw,cap_kill;deny=ptrace"), 0);
}

/* Least privilege: the Landlock ruleset, the identity switch and the
 * listener hand-off add system calls, not allocations. */
static void test_least_privilege_does_not_allocate(void **state)
{
    (void)state;
#ifdef FR_NOALLOC_SKIP
    skip();
#endif
    assert_int_equal(allocations_during("preset=python;fs=libs;read=/tmp", NOTIFY), 0);
    assert_int_equal(allocations_during("preset=exec;fs=system;processes=4", NOTIFY), 0);
    assert_int_equal(allocations_during("preset=none;deny=socket;fs=libs", NOTIFY), 0);
    if (geteuid() == 0)
        assert_int_equal(
            allocations_during("preset=python;fs=libs;user=slot;uid_base=61800;keep_caps=cap_net_raw", SLOT0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_works),
        cmocka_unit_test(test_python_apply_does_not_allocate),
        cmocka_unit_test(test_caps_and_none_do_not_allocate),
        cmocka_unit_test(test_least_privilege_does_not_allocate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
