/* test_oom.c — the OOM-kill counter of the pool (launcher/pool/oom.c): the
 * parser of memory.oom_control (v1) / memory.events (v2) text, locating the
 * file from a cgroup location (fixture directories), and how kills seen
 * since the last read are given to jobs that died of an unexplained
 * SIGKILL. (A real OOM kill under a real v1 memory cgroup:
 * tests/cli/run_oom.bats.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fitrun/pool.h"

static const char V1[] = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
static const char V2[] = "low 0\nhigh 12\nmax 40\noom 5\noom_kill 4\noom_group_kill 1\n";

static void parse_ok(const char *text, uint64_t want)
{
    uint64_t n = 999;
    char err[256] = "";
    assert_int_equal(fr_oom_parse(text, "f", &n, err, sizeof err), 0);
    assert_int_equal(n, want);
}

static void parse_fails(const char *text, const char *want_msg)
{
    uint64_t n = 999;
    char err[256] = "";
    assert_int_equal(fr_oom_parse(text, "memory.events", &n, err, sizeof err), -1);
    if (!strstr(err, want_msg))
        fail_msg("message '%s' lacks '%s'", err, want_msg);
    assert_int_equal(n, 999); /* untouched */
}

static void test_parse_v1_and_v2(void **state)
{
    (void)state;
    parse_ok(V1, 3);
    parse_ok(V2, 4);           /* not oom (5) nor oom_group_kill (1) */
    parse_ok("oom_kill 0", 0); /* no final newline */
    parse_ok("oom_kill\t18446744073709551615\n", UINT64_MAX);
    parse_ok("oom_kill_disable 1\noom_kill 7\n", 7); /* oom_kill_disable is another key */
}

static void test_parse_errors_name_file_and_line(void **state)
{
    (void)state;
    parse_fails("oom_kill_disable 0\nunder_oom 0\n", "memory.events: no oom_kill line");
    parse_fails("", "no oom_kill line");
    parse_fails("low 0\noom_kill x12\n", "memory.events:2: oom_kill value 'x12' is not a count");
    parse_fails("oom_kill -1\n", "memory.events:1:");
    parse_fails("oom_kill 12 13\n", "memory.events:1:");
    parse_fails("oom_kill 123456789012345678901234567890123\n", "memory.events:1:");
}

/* ---- fixture cgroup directories ---- */

#include "tmpdir.h"

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("oom");
}

static void put(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static struct fr_cgroup_loc loc_of(int version)
{
    struct fr_cgroup_loc loc = {.version = version};
    snprintf(loc.mount, sizeof loc.mount, "%s", dir);
    snprintf(loc.dir, sizeof loc.dir, "%s", dir);
    return loc;
}

static void test_init_finds_the_counter_of_each_version(void **state)
{
    (void)state;
    struct fr_oom o;
    char err[1024] = "";
    put("memory.oom_control", V1);
    put("memory.events", V2);
    struct fr_cgroup_loc v1 = loc_of(1), v2 = loc_of(2), none = loc_of(0);
    assert_int_equal(fr_oom_init(&o, &v1, NULL, err, sizeof err), 1);
    assert_non_null(strstr(o.path, "/memory.oom_control"));
    assert_int_equal(o.seen, 3);
    assert_int_equal(fr_oom_init(&o, &v2, "/", err, sizeof err), 1);
    assert_non_null(strstr(o.path, "/memory.events"));
    assert_int_equal(o.seen, 4);
    /* no memory controller: nothing to count with, quietly */
    assert_int_equal(fr_oom_init(&o, &none, NULL, err, sizeof err), 0);
    assert_string_equal(o.path, "");
    assert_false(fr_oom_claim(&o, 4));
}

static void test_init_sysroot_prefixes_the_path(void **state)
{
    (void)state;
    struct fr_oom o;
    char err[1024] = "";
    char cg[128];
    snprintf(cg, sizeof cg, "%s/cg", dir);
    assert_int_equal(mkdir(cg, 0755), 0);
    put("cg/memory.oom_control", "oom_kill 9\n");
    struct fr_cgroup_loc loc = {.version = 1, .mount = "/", .dir = "/cg"};
    assert_int_equal(fr_oom_init(&o, &loc, dir, err, sizeof err), 1);
    assert_int_equal(o.seen, 9);
}

static void test_init_absent_is_quiet_garbage_is_an_error(void **state)
{
    (void)state;
    struct fr_oom o;
    char err[1024] = "";
    struct fr_cgroup_loc v2 = loc_of(2);
    /* the v2 root cgroup has no memory.events */
    assert_int_equal(fr_oom_init(&o, &v2, NULL, err, sizeof err), 0);
    assert_string_equal(o.path, "");
    put("memory.events", "oom 1\noom_kill many\n");
    assert_int_equal(fr_oom_init(&o, &v2, NULL, err, sizeof err), -1);
    assert_string_equal(o.path, "");
    if (!strstr(err, "memory.events:2: oom_kill value 'many'"))
        fail_msg("message: %s", err);
}

static void test_claim_gives_each_new_kill_to_one_job(void **state)
{
    (void)state;
    struct fr_oom o;
    char err[1024] = "";
    struct fr_cgroup_loc v1 = loc_of(1);
    put("memory.oom_control", V1); /* 3 kills before the run: not ours */
    assert_int_equal(fr_oom_init(&o, &v1, NULL, err, sizeof err), 1);
    /* a SIGKILL without a kill counted: not memory */
    assert_false(fr_oom_claim(&o, 2));
    /* two jobs killed together: the first read sees both */
    put("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n");
    assert_true(fr_oom_claim(&o, 2));
    assert_true(fr_oom_claim(&o, 1));
    assert_false(fr_oom_claim(&o, 1)); /* spent */
    /* three kills but one job left to claim: the others were not jobs */
    put("memory.oom_control", "oom_kill 8\n");
    assert_true(fr_oom_claim(&o, 1));
    assert_false(fr_oom_claim(&o, 1));
    assert_int_equal(o.seen, 8);
}

static void test_claim_survives_a_vanished_counter(void **state)
{
    (void)state;
    struct fr_oom o;
    char err[1024] = "";
    struct fr_cgroup_loc v1 = loc_of(1);
    put("memory.oom_control", V1);
    assert_int_equal(fr_oom_init(&o, &v1, NULL, err, sizeof err), 1);
    char path[256];
    snprintf(path, sizeof path, "%s/memory.oom_control", dir);
    assert_int_equal(unlink(path), 0);
    assert_false(fr_oom_claim(&o, 1)); /* warns once */
    assert_true(o.warned);
    assert_false(fr_oom_claim(&o, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_v1_and_v2),
        cmocka_unit_test(test_parse_errors_name_file_and_line),
        cmocka_unit_test_setup_teardown(test_init_finds_the_counter_of_each_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_sysroot_prefixes_the_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_absent_is_quiet_garbage_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_gives_each_new_kill_to_one_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_claim_survives_a_vanished_counter, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
