/* test_sandbox_policy.c — building policies in the parent: names, errors
 * that name the culprit, the compiled program, packed specs. (Policies are
 * written as "key=value" text here for brevity: fitrun/sandbox_keys.h,
 * tested in test_sandbox_keys.c.) */
#include <linux/filter.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fitrun/common.h"
#include "fitrun/sandbox.h"
#include "fitrun/sandbox_keys.h"

static struct fr_policy *build_kv_ok(const char *kv)
{
    char err[256] = "";
    struct fr_policy *p = NULL;
    int rc = fr_sandbox_text_build(kv, NULL, &p, err, sizeof err);
    if (rc != 0)
        fail_msg("fr_sandbox_text_build(\"%s\") failed: %s", kv, err);
    assert_non_null(p);
    return p;
}

/* Build must fail, and the message must contain `needle`. */
static void build_kv_fails(const char *kv, const char *needle)
{
    char err[256] = "";
    struct fr_policy *p = (struct fr_policy *)0x1;
    assert_int_equal(fr_sandbox_text_build(kv, NULL, &p, err, sizeof err), -1);
    assert_null(p);
    if (!strstr(err, needle))
        fail_msg("error for \"%s\" is \"%s\", expected it to mention \"%s\"", kv, err, needle);
}

static void describe(const struct fr_policy *p, char *buf, size_t n)
{
    assert_true(fr_policy_describe(p, buf, n) > 0);
}

static void test_preset_names(void **state)
{
    (void)state;
    enum fr_preset p;
    assert_int_equal(fr_preset_parse("python", &p), 0);
    assert_int_equal(p, FR_PRESET_PYTHON);
    assert_int_equal(fr_preset_parse("exec", &p), 0);
    assert_int_equal(p, FR_PRESET_EXEC);
    assert_int_equal(fr_preset_parse("none", &p), 0);
    assert_int_equal(p, FR_PRESET_NONE);
    assert_int_equal(fr_preset_parse("Python", &p), -1);
    assert_int_equal(fr_preset_parse("", &p), -1);
    assert_string_equal(fr_preset_name(FR_PRESET_PYTHON), "python");
    assert_string_equal(fr_preset_name(FR_PRESET_EXEC), "exec");
    assert_string_equal(fr_preset_name(FR_PRESET_NONE), "none");
    assert_string_equal(fr_preset_name((enum fr_preset)42), "unknown");
}

static void test_struct_build_and_describe(void **state)
{
    (void)state;
    const char *allow[] = {"socket", NULL};
    const char *keep[] = {"cap_net_raw", NULL};
    struct fr_policy_spec spec = {
        .preset = FR_PRESET_PYTHON,
        .cpu_ms = 1500,
        .as_bytes = 1ull << 30,
        .nofile = 64,
        .allow = allow,
        .keep_caps = keep,
    };
    char err[256];
    struct fr_policy *p = NULL;
    assert_int_equal(fr_policy_build(&spec, &p, err, sizeof err), 0);
    char d[512];
    describe(p, d, sizeof d);
    /* 1500 ms rounds up to a 2 s soft limit, hard one second later. */
    assert_non_null(strstr(d, "preset=python"));
    assert_non_null(strstr(d, "seccomp=notify("));
    assert_non_null(strstr(d, "cpu=2s(hard 3s)"));
    assert_non_null(strstr(d, "as=1.0 GiB"));
    assert_non_null(strstr(d, "nofile=64"));
    assert_non_null(strstr(d, "core=0"));
    assert_non_null(strstr(d, "caps=cap_net_raw"));
    assert_non_null(strstr(d, "allow=socket"));
    fr_policy_free(p);
}

static void test_name_errors(void **state)
{
    (void)state;
    build_kv_fails("allow=sockett", "unknown syscall 'sockett' in allow");
    build_kv_fails("deny=ptrace,mountt", "unknown syscall 'mountt' in deny");
    build_kv_fails("keep_caps=cap_net_rawx", "unknown capability 'cap_net_rawx' in keep_caps");
    build_kv_fails("allow=socket;deny=socket", "'socket' is in both allow and deny");
    build_kv_fails("deny=write", "cannot deny 'write'");
    build_kv_fails("deny=exit_group", "cannot deny 'exit_group'");
    build_kv_fails("preset=none;allow=socket", "allow needs preset python or exec");
}

static void test_build_argument_errors(void **state)
{
    (void)state;
    char err[128];
    struct fr_policy *p = NULL;
    assert_int_equal(fr_policy_build(NULL, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "no policy spec"));
    struct fr_policy_spec bad = {.preset = (enum fr_preset)9};
    assert_int_equal(fr_policy_build(&bad, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown preset 9"));
    fr_policy_free(NULL); /* must be harmless */
}

/* The compiled program: present for python/exec (and none+deny), absent
 * for plain none; kill/tkill/tgkill carry the pid placeholder the child
 * patches. */
static void test_bpf_program(void **state)
{
    (void)state;
    size_t n = 99;
    struct fr_policy *none = build_kv_ok("preset=none");
    assert_null(fr_policy_bpf(none, &n));
    assert_int_equal(n, 0);
    char d[256];
    describe(none, d, sizeof d);
    assert_non_null(strstr(d, "seccomp=off"));
    fr_policy_free(none);

    struct fr_policy *py = build_kv_ok("preset=python");
    const struct sock_filter *insns = fr_policy_bpf(py, &n);
    assert_non_null(insns);
    assert_true(n > 50 && n < 2048);
    int placeholders = 0;
    for (size_t i = 0; i < n; i++)
        if (insns[i].code == (BPF_JMP | BPF_JEQ | BPF_K) && insns[i].k == 0x7ff1d0d0u)
            placeholders++;
    /* kill, tkill and tgkill compare against it; libseccomp merges the
     * identical comparison blocks, so there is at least one. */
    assert_true(placeholders >= 1);
    /* The first instructions check the architecture (libseccomp). */
    assert_int_equal(insns[0].code, BPF_LD | BPF_W | BPF_ABS);
    fr_policy_free(py);

    struct fr_policy *deny = build_kv_ok("preset=none;deny=socket");
    assert_non_null(fr_policy_bpf(deny, &n));
    describe(deny, d, sizeof d);
    assert_non_null(strstr(d, "seccomp=notify("));
    fr_policy_free(deny);
}

/* A packed spec builds the policy the spec builds, plus the read paths
 * given on the other side. */
static void test_pack_round_trip(void **state)
{
    (void)state;
    const char *allow[] = {"socket", "connect", NULL};
    const char *deny[] = {"ptrace", NULL};
    const char *keep[] = {"cap_net_raw", NULL};
    const char *reads[] = {"/usr/lib", "/dir with, comma; and space?", NULL};
    struct fr_policy_spec spec = {
        .preset = FR_PRESET_EXEC,
        .cpu_ms = 1500,
        .as_bytes = 1ull << 30,
        .fsize_bytes = 1 << 20,
        .nofile = 64,
        .nproc = 4,
        .stack_bytes = 8 << 20,
        .core_bytes = 0,
        .allow = allow,
        .deny = deny,
        .keep_caps = keep,
        .spec_allow = true,
        .fs = FR_FS_LIBS,
        .read_paths = reads,
        .slot_identity = true,
        .uid_base = 61000,
        .slots = 3,
    };
    long need = fr_policy_spec_pack(&spec, NULL, 0);
    assert_true(need > 100);
    unsigned char buf[4096];
    assert_true((size_t)need <= sizeof buf);
    assert_int_equal(fr_policy_spec_pack(&spec, buf, 10), need); /* too small: only the length */
    assert_int_equal(fr_policy_spec_pack(&spec, buf, sizeof buf), need);

    char err[256], direct[512], packed[512];
    struct fr_policy *a = NULL, *b = NULL;
    assert_int_equal(fr_policy_build(&spec, &a, err, sizeof err), 0);
    assert_int_equal(fr_policy_build_packed(buf, (size_t)need, NULL, &b, err, sizeof err), 0);
    describe(a, direct, sizeof direct);
    describe(b, packed, sizeof packed);
    assert_string_equal(direct, packed);
    struct fr_policy_info ia, ib;
    fr_policy_info(a, &ia);
    fr_policy_info(b, &ib);
    assert_int_equal(ia.nread, ib.nread);
    assert_int_equal(ia.uid_first, ib.uid_first);
    assert_int_equal(ia.uid_last, ib.uid_last);
    fr_policy_free(b);

    /* more_read adds to the packed read paths */
    const char *more[] = {"/usr/share", NULL};
    assert_int_equal(fr_policy_build_packed(buf, (size_t)need, more, &b, err, sizeof err), 0);
    fr_policy_info(b, &ib);
    if (ia.landlock)
        assert_int_equal(ib.nread, ia.nread + 1);
    assert_true(fr_policy_may_read(b, "/usr/share") || !ia.landlock);
    assert_false(fr_policy_may_read(a, "/usr/share"));
    fr_policy_free(a);
    fr_policy_free(b);

    /* an empty spec packs too */
    struct fr_policy_spec empty = {.preset = FR_PRESET_NONE};
    need = fr_policy_spec_pack(&empty, buf, sizeof buf);
    assert_int_equal(fr_policy_build_packed(buf, (size_t)need, NULL, &a, err, sizeof err), 0);
    describe(a, direct, sizeof direct);
    assert_non_null(strstr(direct, "preset=none seccomp=off"));
    fr_policy_free(a);
}

/* Whatever the bytes, unpacking fails with a message, never reads beyond
 * them, and leaves no policy. */
static void test_pack_malformed(void **state)
{
    (void)state;
    const char *allow[] = {"socket", NULL};
    struct fr_policy_spec spec = {.preset = FR_PRESET_PYTHON, .allow = allow};
    unsigned char buf[512];
    long need = fr_policy_spec_pack(&spec, buf, sizeof buf);
    assert_true(need > 0 && (size_t)need < sizeof buf);
    char err[256];
    struct fr_policy *p = (struct fr_policy *)0x1;
    /* every truncation */
    for (long n = 0; n < need; n++) {
        assert_int_equal(fr_policy_build_packed(buf, (size_t)n, NULL, &p, err, sizeof err), -1);
        assert_null(p);
        assert_non_null(strstr(err, "sandbox: packed spec: "));
    }
    assert_int_equal(fr_policy_build_packed(NULL, 0, NULL, &p, err, sizeof err), -1);
    /* a foreign magic, an enum out of range, an unterminated name, a
     * list longer than its bytes */
    unsigned char bad[512];
    memcpy(bad, buf, (size_t)need);
    bad[0] = 'X';
    assert_int_equal(fr_policy_build_packed(bad, (size_t)need, NULL, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a packed spec"));
    memcpy(bad, buf, (size_t)need);
    bad[8] = 7; /* preset */
    assert_int_equal(fr_policy_build_packed(bad, (size_t)need, NULL, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "out of range"));
    memcpy(bad, buf, (size_t)need);
    bad[need - 17] = 'x'; /* the NUL after "socket" (4 empty lists follow: 16 bytes) */
    assert_int_equal(fr_policy_build_packed(bad, (size_t)need, NULL, &p, err, sizeof err), -1);
    assert_null(p);
    assert_non_null(strstr(err, "sandbox: packed spec: "));
    /* trailing bytes */
    memcpy(bad, buf, (size_t)need);
    uint32_t total = (uint32_t)need + 1;
    memcpy(bad + 4, &total, sizeof total);
    bad[need] = 0;
    assert_int_equal(fr_policy_build_packed(bad, (size_t)need + 1, NULL, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "bytes after the last list"));
    /* and the original still builds */
    assert_int_equal(fr_policy_build_packed(buf, (size_t)need, NULL, &p, err, sizeof err), 0);
    fr_policy_free(p);
}

static void test_names(void **state)
{
    (void)state;
    char buf[40];
    assert_string_equal(fr_syscall_name(41, buf, sizeof buf), "socket"); /* x86_64 numbering */
    assert_string_equal(fr_syscall_name(-1, buf, sizeof buf), "unknown");
    assert_string_equal(fr_syscall_name(100000, buf, sizeof buf), "syscall_100000");
    assert_string_equal(fr_signal_name(11, buf, sizeof buf), "SIGSEGV");
    assert_string_equal(fr_signal_name(31, buf, sizeof buf), "SIGSYS");
    assert_string_equal(fr_signal_name(24, buf, sizeof buf), "SIGXCPU");
}

/* Whether a policy lets a job create processes (the pool skips its orphan
 * sweep after each python job when it does not). */
static bool processes(enum fr_preset preset, uint64_t nproc, const char *const *allow)
{
    struct fr_policy_spec spec = {.preset = preset, .nproc = nproc, .allow = allow};
    char err[256];
    struct fr_policy *p = NULL;
    assert_int_equal(fr_policy_build(&spec, &p, err, sizeof err), 0);
    struct fr_policy_info info;
    fr_policy_info(p, &info);
    fr_policy_free(p);
    if (!strcmp(info.seccomp, "off"))
        assert_true(info.processes);
    return info.processes;
}

static void test_processes(void **state)
{
    (void)state;
    const char *fork_[] = {"fork", NULL}, *clone3[] = {"clone3", NULL}, *socket_[] = {"socket", NULL};
    assert_false(processes(FR_PRESET_PYTHON, 1, NULL));
    assert_false(processes(FR_PRESET_PYTHON, 1, socket_));
    assert_false(processes(FR_PRESET_PYTHON, 4, NULL)); /* the python preset has no process rules */
    assert_true(processes(FR_PRESET_PYTHON, 1, fork_));
    assert_true(processes(FR_PRESET_PYTHON, 1, clone3));
    assert_false(processes(FR_PRESET_EXEC, 1, NULL));
    assert_true(processes(FR_PRESET_EXEC, 0, NULL));
    assert_true(processes(FR_PRESET_EXEC, 8, NULL));
    assert_true(processes(FR_PRESET_NONE, 1, NULL));
}

/* fr_peek_words: each word from its own address, in order; n = 0 reads
 * nothing (the reuse check's reader; its behaviour in the runtime is
 * tests/python/test_runtime.py, ReuseCheck). */
static void test_peek_words(void **state)
{
    (void)state;
    uint64_t a = 7, b = UINT64_MAX, c = 0x0123456789abcdefull;
    const uint64_t *addrs[] = {&c, &a, &b, &a};
    uint64_t out[5] = {1, 1, 1, 1, 42};
    fr_peek_words(addrs, out, 4);
    assert_int_equal(out[0], c);
    assert_int_equal(out[1], 7);
    assert_int_equal(out[2], UINT64_MAX);
    assert_int_equal(out[3], 7);
    assert_int_equal(out[4], 42);
    fr_peek_words(NULL, NULL, 0);
}

/* fr_peek_differs: the first word that is not the one wanted, or n. */
static void test_peek_differs(void **state)
{
    (void)state;
    uint64_t a = 7, b = UINT64_MAX, c = 0;
    const uint64_t *addrs[] = {&a, &b, &c};
    uint64_t want[] = {7, UINT64_MAX, 0};
    assert_int_equal(fr_peek_differs(addrs, want, 3), 3);
    c = 1;
    assert_int_equal(fr_peek_differs(addrs, want, 3), 2);
    assert_int_equal(fr_peek_differs(addrs, want, 2), 2);
    a = 8;
    assert_int_equal(fr_peek_differs(addrs, want, 3), 0);
    assert_int_equal(fr_peek_differs(NULL, NULL, 0), 0);
}

/* fr_peek_arrays: each object's count, then (count + add) * mult words
 * of its array, in order; what does not fit in cap is counted, not read. */
struct fake_list {
    uint64_t head;
    uint64_t count;
    const uint64_t *items;
};

static void test_peek_arrays(void **state)
{
    (void)state;
    const uint64_t xs[] = {10, 11, 12}, ys[] = {20};
    const struct fake_list a = {0, 3, xs}, b = {0, 0, NULL}, c = {0, 1, ys};
    const unsigned char *objs[] = {(const unsigned char *)&a, (const unsigned char *)&b, (const unsigned char *)&c};
    const size_t at_count = offsetof(struct fake_list, count), at_items = offsetof(struct fake_list, items);
    uint64_t out[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    assert_int_equal(fr_peek_arrays(objs, 3, at_count, at_items, 0, 1, out, 8), 7);
    const uint64_t want[] = {3, 10, 11, 12, 0, 1, 20, 0}; /* the last one zeroed */
    assert_memory_equal(out, want, sizeof want);
    /* Room for the first array and the second's count: the third is
     * counted only. */
    uint64_t small[5] = {0, 0, 0, 0, 0};
    assert_int_equal(fr_peek_arrays(objs, 3, at_count, at_items, 0, 1, small, 5), 7);
    assert_int_equal(small[4], 0);
    assert_int_equal(small[3], 12);
    /* A count no cap could hold is never read past: a NULL array. */
    const struct fake_list huge = {0, UINT64_MAX, NULL};
    const unsigned char *one[] = {(const unsigned char *)&huge, (const unsigned char *)&a};
    assert_int_equal(fr_peek_arrays(one, 2, at_count, at_items, 0, 1, small, 5), SIZE_MAX);
    assert_int_equal(small[0], UINT64_MAX);
    assert_int_equal(fr_peek_arrays(one, 1, at_count, at_items, 1, 2, small, 5), SIZE_MAX); /* no overflow */
    /* A table: (count + 1) * 2 words (a set's mask, its entries). */
    const uint64_t table[] = {1, 2, 3, 4};
    const struct fake_list set = {0, 1, table};
    const unsigned char *sets[] = {(const unsigned char *)&set};
    uint64_t t[6] = {9, 9, 9, 9, 9, 9};
    assert_int_equal(fr_peek_arrays(sets, 1, at_count, at_items, 1, 2, t, 6), 5);
    const uint64_t want_t[] = {1, 1, 2, 3, 4, 0};
    assert_memory_equal(t, want_t, sizeof want_t);
    assert_int_equal(fr_peek_arrays(NULL, 0, at_count, at_items, 0, 1, NULL, 0), 0);
}

/* The CPU backstop of a job whose budget the pool enforces: the budget
 * plus max(20%, 200 ms), never past the longest duration fitrun takes. */
static void test_cpu_backstop(void **state)
{
    (void)state;
    assert_int_equal(fr_cpu_backstop_ms(0), 0); /* no budget, no limit */
    assert_int_equal(fr_cpu_backstop_ms(300), 500);
    assert_int_equal(fr_cpu_backstop_ms(1000), 1200);
    assert_int_equal(fr_cpu_backstop_ms(2000), 2400);
    assert_int_equal(fr_cpu_backstop_ms(10000), 12000);
    assert_int_equal(fr_cpu_backstop_ms(FR_DURATION_MAX_MS), FR_DURATION_MAX_MS);
    assert_int_equal(fr_cpu_backstop_ms(FR_DURATION_MAX_MS - 1), FR_DURATION_MAX_MS);
    assert_int_equal(fr_cpu_backstop_ms(UINT64_MAX), UINT64_MAX); /* unchanged, never wrapped */
}

/* The checks a caller makes first to say where a list came from: each
 * failure names the list at fault, and a spec that passes them builds. */
static void test_check_lists_names_the_list(void **state)
{
    (void)state;
    char err[256];
    const char *key = NULL;
    const char *sock[] = {"socket", NULL}, *wr[] = {"write", NULL}, *missing[] = {"/nonexistent/fitrun", NULL},
               *rel[] = {"relative/path", NULL}, *tmp[] = {"/tmp", NULL};
    struct fr_policy_spec spec = {.preset = FR_PRESET_PYTHON, .allow = sock, .deny = sock};
    assert_int_equal(fr_policy_check_lists(&spec, &key, err, sizeof err), -1);
    assert_string_equal(key, "deny");
    assert_non_null(strstr(err, "'socket' is in both allow and deny"));
    spec = (struct fr_policy_spec){.preset = FR_PRESET_PYTHON, .deny = wr};
    assert_int_equal(fr_policy_check_lists(&spec, &key, err, sizeof err), -1);
    assert_string_equal(key, "deny");
    spec = (struct fr_policy_spec){.preset = FR_PRESET_NONE, .allow = sock};
    assert_int_equal(fr_policy_check_lists(&spec, &key, err, sizeof err), -1);
    assert_string_equal(key, "allow");
    spec = (struct fr_policy_spec){.preset = FR_PRESET_EXEC, .read_paths = missing};
    assert_int_equal(fr_policy_check_lists(&spec, &key, err, sizeof err), -1);
    assert_string_equal(key, "read");
    assert_non_null(strstr(err, "read path '/nonexistent/fitrun'"));
    spec = (struct fr_policy_spec){.preset = FR_PRESET_EXEC, .read_paths = tmp, .write_paths = rel};
    assert_int_equal(fr_policy_check_lists(&spec, &key, err, sizeof err), -1);
    assert_string_equal(key, "write");
    assert_non_null(strstr(err, "is not absolute"));
    spec = (struct fr_policy_spec){.preset = FR_PRESET_EXEC, .read_paths = tmp, .allow = sock};
    assert_int_equal(fr_policy_check_lists(&spec, NULL, err, sizeof err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preset_names),   cmocka_unit_test(test_struct_build_and_describe),
        cmocka_unit_test(test_name_errors),    cmocka_unit_test(test_build_argument_errors),
        cmocka_unit_test(test_bpf_program),    cmocka_unit_test(test_pack_round_trip),
        cmocka_unit_test(test_pack_malformed), cmocka_unit_test(test_names),
        cmocka_unit_test(test_processes),      cmocka_unit_test(test_peek_words),
        cmocka_unit_test(test_peek_differs),   cmocka_unit_test(test_peek_arrays),
        cmocka_unit_test(test_cpu_backstop),   cmocka_unit_test(test_check_lists_names_the_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
