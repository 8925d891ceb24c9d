/* test_sandbox_policy.c — building policies in the parent: names, the
 * key=value form, errors that name the culprit, the compiled program. */
#include <linux/filter.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fitrun/sandbox.h"

static struct fr_policy *build_kv_ok(const char *kv)
{
    char err[256] = "";
    struct fr_policy *p = NULL;
    int rc = fr_policy_build_kv(kv, &p, err, sizeof err);
    if (rc != 0)
        fail_msg("fr_policy_build_kv(\"%s\") failed: %s", kv, err);
    assert_non_null(p);
    return p;
}

/* Build must fail, and the message must contain `needle`. */
static void build_kv_fails(const char *kv, const char *needle)
{
    char err[256] = "";
    struct fr_policy *p = (struct fr_policy *)0x1;
    assert_int_equal(fr_policy_build_kv(kv, &p, err, sizeof err), -1);
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
    const char *allow[] = { "socket", NULL };
    const char *keep[] = { "cap_net_raw", NULL };
    struct fr_policy_spec spec = {
        .preset = FR_PRESET_PYTHON, .cpu_ms = 1500, .as_bytes = 1ull << 30, .nofile = 64,
        .allow = allow, .keep_caps = keep,
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

static void test_kv_values(void **state)
{
    (void)state;
    struct fr_policy *p = build_kv_ok(" preset = exec ; cpu_time=250ms;memory=512M; fsize=1M ;nofile=32;"
                                      "processes=4;stack=8M;core=0;spec_allow=yes;wall_time=10s;output=1M;"
                                      "deny=ptrace, mount;keep_caps=cap_net_raw cap_kill");
    char d[512];
    describe(p, d, sizeof d);
    assert_non_null(strstr(d, "preset=exec seccomp=notify("));
    assert_non_null(strstr(d, "spec_allow=yes"));
    assert_non_null(strstr(d, "cpu=1s(hard 2s)"));
    assert_non_null(strstr(d, "as=512.0 MiB"));
    assert_non_null(strstr(d, "fsize=1.0 MiB"));
    assert_non_null(strstr(d, "nproc=4"));
    assert_non_null(strstr(d, "stack=8.0 MiB"));
    assert_non_null(strstr(d, "deny=ptrace,mount"));
    assert_non_null(strstr(d, "caps=cap_net_raw,cap_kill"));
    fr_policy_free(p);
}

static void test_kv_default_preset_is_python(void **state)
{
    (void)state;
    struct fr_policy *p = build_kv_ok("");
    char d[256];
    describe(p, d, sizeof d);
    assert_non_null(strstr(d, "preset=python"));
    fr_policy_free(p);
}

static void test_kv_errors(void **state)
{
    (void)state;
    build_kv_fails("preset=python;cpu_tme=1s", "unknown key 'cpu_tme'");
    build_kv_fails("preset=pyhton", "bad value 'pyhton' for preset");
    build_kv_fails("memory=lots", "item 1: bad value 'lots' for memory");
    build_kv_fails("preset=python;cpu_time=soon", "item 2: bad value 'soon' for cpu_time");
    build_kv_fails("preset=python;;nofile", "item 2 'nofile': expected key=value");
    build_kv_fails("spec_allow=maybe", "bad value 'maybe' for spec_allow");
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
    struct fr_policy_spec bad = { .preset = (enum fr_preset)9 };
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preset_names),
        cmocka_unit_test(test_struct_build_and_describe),
        cmocka_unit_test(test_kv_values),
        cmocka_unit_test(test_kv_default_preset_is_python),
        cmocka_unit_test(test_kv_errors),
        cmocka_unit_test(test_name_errors),
        cmocka_unit_test(test_build_argument_errors),
        cmocka_unit_test(test_bpf_program),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
