/* test_detect_parsers.c — the pure parsers of launcher/detect/: CPU lists,
 * mountinfo lines and escapes, /proc/self/cgroup lines, path translation
 * through mount roots, cpu.max / cfs quota, limit files, meminfo,
 * memory.stat, tmpfs sizes, SLURM lists and HTCondor ads; and the note list. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../launcher/detect/internal.h"
#include "fitrun/detect.h"
#include "fitrun/common.h"

#define assert_double(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-12)

/* ---- CPU lists ---- */

static void test_cpulist_parse(void **state)
{
    (void)state;
    uint64_t m[FR_MASK_WORDS];
    assert_int_equal(fr_cpulist_parse("0-3,8,10-11", m, FR_CPU_BITS), 7);
    assert_true(m[0] == 0xd0f);
    assert_int_equal(fr_cpulist_parse("0", m, 64), 1);
    assert_int_equal(fr_cpulist_parse("0-3\n", m, 64), 4); /* as the kernel writes it */
    assert_int_equal(fr_cpulist_parse("  5  ", NULL, 0), 1);
    assert_int_equal(fr_cpulist_parse("", m, 64), 0); /* empty cpuset */
    assert_int_equal(fr_cpulist_parse("\n", m, 64), 0);
    assert_int_equal(fr_cpulist_parse("0-3,2-5", m, 64), 6); /* overlaps counted once */
    assert_int_equal(fr_cpulist_parse("0-255", m, FR_CPU_BITS), 256);
    assert_int_equal(fr_cpulist_parse("0-8191", NULL, 0), 8192);
    assert_int_equal(fr_cpulist_parse("0-15:2/4", m, 64), 8); /* kernel stride syntax: 0,1,4,5,8,9,12,13 */
    assert_true(m[0] == 0x3333);
    /* Bits above nbits are counted but not written. */
    m[1] = 0xdead;
    assert_int_equal(fr_cpulist_parse("60-67", m, 64), 8);
    assert_true(m[0] == 0xf000000000000000ull);
    assert_true(m[1] == 0xdead);
    assert_int_equal(fr_cpulist_parse("0-9", m, 4), 10);
    assert_true(m[0] == 0xf);
}

static void test_cpulist_garbage(void **state)
{
    (void)state;
    const char *bad[] = {"3-1",           "a",   "1,,2",    "-1",      "1-",    "1,",  ",1", "0-zz", "8192",
                         "0-99999999999", "1 2", "0-3:0/4", "0-3:5/4", "0-3:1", "0x3", "1.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (fr_cpulist_parse(bad[i], NULL, 0) != -1)
            fail_msg("'%s' parsed", bad[i]);
    }
    assert_int_equal(fr_cpulist_parse(NULL, NULL, 0), -1);
}

static void test_cpulist_format(void **state)
{
    (void)state;
    uint64_t m[FR_MASK_WORDS];
    char buf[64];
    fr_cpulist_parse("0-3,8,10-11,4095", m, FR_CPU_BITS);
    assert_string_equal(fr_cpulist_format(m, FR_CPU_BITS, buf, sizeof buf), "0-3,8,10-11,4095");
    memset(m, 0, sizeof m);
    assert_string_equal(fr_cpulist_format(m, FR_CPU_BITS, buf, sizeof buf), "");
    fr_cpulist_parse("0-63:1/2", m, FR_CPU_BITS); /* 32 single CPUs: does not fit in 16 bytes */
    assert_string_equal(fr_cpulist_format(m, FR_CPU_BITS, buf, 16), "0,2,4,6,8,10...");
    assert_true(strlen(buf) < 16);
}

/* ---- mountinfo ---- */

static void test_unescape(void **state)
{
    (void)state;
    char s[] = "/a\\040b\\011c\\012d\\134e\\04x\\999\\000";
    fr_unescape_octal(s);
    assert_string_equal(s, "/a b\tc\nd\\e\\04x\\999\\000");
}

static void test_mountinfo_line(void **state)
{
    (void)state;
    struct fr_mountinfo_entry e;
    const char *why = NULL;
    char l1[] =
        "36 35 98:0 /my\\040jobs /sys/fs/cgroup/cpu\\040quota rw,noatime shared:1 master:2 - cgroup cgroup rw,cpu,cpuacct";
    assert_int_equal(fr_mountinfo_parse_line(l1, &e, &why), 0);
    assert_string_equal(e.root, "/my jobs");
    assert_string_equal(e.mountpoint, "/sys/fs/cgroup/cpu quota");
    assert_string_equal(e.fstype, "cgroup");
    assert_string_equal(e.source, "cgroup");
    assert_string_equal(e.super_opts, "rw,cpu,cpuacct");

    char l2[] = "30 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate"; /* no optional field */
    assert_int_equal(fr_mountinfo_parse_line(l2, &e, &why), 0);
    assert_string_equal(e.fstype, "cgroup2");
    char l3[] = "30 22 0:26 / /x rw - tmpfs tmpfs"; /* old kernel: no super options */
    assert_int_equal(fr_mountinfo_parse_line(l3, &e, &why), 0);
    assert_string_equal(e.super_opts, "");
    /* Blanks after the source are no options (found by fuzz_mountinfo). */
    char l4[] = "30 22 0:26 / /x rw - tmpfs tmpfs   ";
    assert_int_equal(fr_mountinfo_parse_line(l4, &e, &why), 0);
    assert_string_equal(e.super_opts, "");

    char b1[] = "1 2 3 4";
    assert_int_equal(fr_mountinfo_parse_line(b1, &e, &why), -1);
    assert_non_null(strstr(why, "fields"));
    char b2[] = "31 1 0:1 / /x rw shared:1 tmpfs tmpfs rw";
    assert_int_equal(fr_mountinfo_parse_line(b2, &e, &why), -1);
    assert_non_null(strstr(why, "separator"));
    char b3[] = "31 1 0:1 / /x rw -";
    assert_int_equal(fr_mountinfo_parse_line(b3, &e, &why), -1);
    char b4[] = "31 1 0:1 rel /x rw - tmpfs tmpfs rw";
    assert_int_equal(fr_mountinfo_parse_line(b4, &e, &why), -1);
    char b5[] = "";
    assert_int_equal(fr_mountinfo_parse_line(b5, &e, &why), -1);
}

static void test_opts(void **state)
{
    (void)state;
    assert_true(fr_opt_has("rw,cpu,cpuacct", "cpu"));
    assert_true(fr_opt_has("rw,cpuacct,cpu", "cpu"));
    assert_false(fr_opt_has("rw,cpuacct", "cpu"));
    assert_false(fr_opt_has("rw,cpuset", "cpu"));
    assert_false(fr_opt_has("rw,name=systemd", "systemd"));
    assert_false(fr_opt_has("", "cpu"));
    char v[16];
    assert_true(fr_opt_value("rw,size=65536k,mode=755", "size", v, sizeof v));
    assert_string_equal(v, "65536k");
    assert_false(fr_opt_value("rw,nr_size=5", "size", v, sizeof v));
    assert_false(fr_opt_value("rw,size", "size", v, sizeof v));
}

/* ---- /proc/self/cgroup and translation ---- */

static void test_proc_cgroup(void **state)
{
    (void)state;
    const char *t = "12:pids:/a\n4:cpu,cpuacct:/docker/x\n3:cpuset:/\n1:name=systemd:/s\n0::/v2/path:with:colons\n";
    char out[256];
    assert_int_equal(fr_proc_cgroup_find(NULL, t, "cpu", out, sizeof out), 0);
    assert_string_equal(out, "/docker/x");
    assert_int_equal(fr_proc_cgroup_find(NULL, t, "cpuacct", out, sizeof out), 0);
    assert_int_equal(fr_proc_cgroup_find(NULL, t, "cpuset", out, sizeof out), 0);
    assert_string_equal(out, "/");
    assert_int_equal(fr_proc_cgroup_find(NULL, t, NULL, out, sizeof out), 0);
    assert_string_equal(out, "/v2/path:with:colons");
    assert_int_equal(fr_proc_cgroup_find(NULL, t, "memory", out, sizeof out), -1);
    assert_int_equal(fr_proc_cgroup_find(NULL, t, "systemd", out, sizeof out),
                     -1); /* named hierarchy is no controller */
    assert_int_equal(fr_proc_cgroup_find(NULL, "0::/x", NULL, out, sizeof out), 0); /* no newline at the end */
    assert_string_equal(out, "/x");
    assert_int_equal(fr_proc_cgroup_find(NULL, "5::/x\n", NULL, out, sizeof out), -1); /* v2 line is ID 0 */
    assert_int_equal(fr_proc_cgroup_find(NULL, "0::/12345678901", NULL, out, 8), -1);  /* too long */

    /* Garbage lines are noted once each, with their number, and skipped. */
    struct fr_resources r;
    struct fr_dx x = {.res = &r};
    memset(&r, 0, sizeof r);
    assert_int_equal(fr_proc_cgroup_find(&x, "hello\n4:cpu:/ok\nx:y:/z\n4:cpu:rel\n", "cpu", out, sizeof out), 0);
    assert_string_equal(out, "/ok");
    assert_int_equal(r.nnotes, 3);
    assert_non_null(strstr(r.notes[0], "line 1"));
    assert_non_null(strstr(r.notes[1], "line 3"));
    assert_non_null(strstr(r.notes[2], "line 4"));
}

static void test_translate(void **state)
{
    (void)state;
    char out[256];
    /* Host mount: root "/". */
    assert_int_equal(fr_cgroup_translate("/sys/fs/cgroup/cpu", "/", "/a/b", out, sizeof out), FR_TR_OK);
    assert_string_equal(out, "/sys/fs/cgroup/cpu/a/b");
    assert_int_equal(fr_cgroup_translate("/sys/fs/cgroup", "/", "/", out, sizeof out), FR_TR_OK);
    assert_string_equal(out, "/sys/fs/cgroup");
    /* Bind-mounted leaf (Docker v1): root == path. */
    assert_int_equal(fr_cgroup_translate("/sys/fs/cgroup/cpu", "/docker/x", "/docker/x", out, sizeof out), FR_TR_OK);
    assert_string_equal(out, "/sys/fs/cgroup/cpu");
    /* Bind-mounted subtree. */
    assert_int_equal(fr_cgroup_translate("/sys/fs/cgroup/cpu", "/docker", "/docker/x/y", out, sizeof out), FR_TR_OK);
    assert_string_equal(out, "/sys/fs/cgroup/cpu/x/y");
    /* Prefix of a name is not an ancestor. */
    assert_int_equal(fr_cgroup_translate("/m", "/docker", "/dockerfoo/x", out, sizeof out), FR_TR_OUTSIDE);
    assert_string_equal(out, "/m");
    /* Roots outside the namespace. */
    assert_int_equal(fr_cgroup_translate("/sys/fs/cgroup", "/..", "/", out, sizeof out), FR_TR_OUTSIDE);
    assert_string_equal(out, "/sys/fs/cgroup");
    assert_int_equal(fr_cgroup_translate("/sys/fs/cgroup", "/../../x", "/y", out, sizeof out), FR_TR_OUTSIDE);
    assert_int_equal(fr_cgroup_translate("/sys/fs/cgroup", "/", "/../sibling", out, sizeof out), FR_TR_OUTSIDE);
    /* A name that merely contains dots is fine. */
    assert_int_equal(fr_cgroup_translate("/c", "/", "/a..b/..c", out, sizeof out), FR_TR_OK);
    assert_string_equal(out, "/c/a..b/..c");
    /* Trailing slashes and a mount at "/". */
    assert_int_equal(fr_cgroup_translate("/sys/fs/cgroup/", "/a/", "/a/b", out, sizeof out), FR_TR_OK);
    assert_string_equal(out, "/sys/fs/cgroup/b");
    assert_int_equal(fr_cgroup_translate("/", "/", "/a", out, sizeof out), FR_TR_OK);
    assert_string_equal(out, "/a");
    assert_int_equal(fr_cgroup_translate("/", "/", "/", out, sizeof out), FR_TR_OK);
    assert_string_equal(out, "/");
    /* Spaces and colons pass through. */
    assert_int_equal(fr_cgroup_translate("/sys/fs/cgroup/cpu quota", "/my jobs", "/my jobs/batch 1", out, sizeof out),
                     FR_TR_OK);
    assert_string_equal(out, "/sys/fs/cgroup/cpu quota/batch 1");
    assert_int_equal(fr_cgroup_translate("/sys/fs/cgroup", "/", "/a/b", out, 10), FR_TR_TOOLONG);
}

/* ---- quota ---- */

static void test_cpu_max(void **state)
{
    (void)state;
    double c = 0;
    bool extra;
    const char *why;
    assert_int_equal(fr_parse_cpu_max("max", &c, &extra, &why), 0);
    assert_int_equal(fr_parse_cpu_max("max 100000\n", &c, &extra, &why), 0);
    assert_int_equal(fr_parse_cpu_max("50000 100000\n", &c, &extra, &why), 1);
    assert_double(c, 0.5);
    assert_false(extra);
    assert_int_equal(fr_parse_cpu_max("150000", &c, &extra, &why), 1); /* one field: default period */
    assert_double(c, 1.5);
    assert_int_equal(fr_parse_cpu_max("200000 50000", &c, &extra, &why), 1);
    assert_double(c, 4);
    assert_int_equal(fr_parse_cpu_max("50000 100000 7", &c, &extra, &why), 1); /* third field ignored, reported */
    assert_true(extra);
    assert_double(c, 0.5);
    /* Whole microseconds only: exponents made infinite or zero quotas
     * ("1e308 1e-300", "1e-300 1e300"), which fuzz_cgroup_files's
     * finite-and-above-0 check flags. */
    const char *bad[] = {
        "",        "\n",    "banana",       "banana 100000", "0 100000",   "-5 100000",      "50000 0",   "50000 -1",
        "50000 x", "max x", "1e308 1e-300", "1e-300 1e300",  "1e5 100000", "50000.5 100000", "50000 1e5", "inf 100000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why = NULL;
        if (fr_parse_cpu_max(bad[i], &c, &extra, &why) != -1 || !why)
            fail_msg("cpu.max '%s' accepted", bad[i]);
    }
    /* Refused, not cut to the parser's 128 bytes: a period cut short is
     * another number (found by fuzz_cgroup_files). */
    char longer[256] = "4 ";
    memset(longer + 2, '1', 150); /* a 150-digit period: cut, it would be a 126-digit one */
    why = NULL;
    assert_int_equal(fr_parse_cpu_max(longer, &c, &extra, &why), -1);
    assert_string_equal(why, "too long");
}

static void test_cfs(void **state)
{
    (void)state;
    double c = 0;
    const char *why;
    assert_int_equal(fr_parse_cfs("-1\n", NULL, &c, &why), 0); /* no quota: period not needed */
    assert_int_equal(fr_parse_cfs("150000\n", "100000\n", &c, &why), 1);
    assert_double(c, 1.5);
    assert_int_equal(fr_parse_cfs("50000", "100000", &c, &why), 1);
    assert_double(c, 0.5);
    assert_int_equal(fr_parse_cfs("50000", "0", &c, &why), -1);
    assert_non_null(strstr(why, "period"));
    assert_int_equal(fr_parse_cfs("50000", NULL, &c, &why), -1);
    assert_int_equal(fr_parse_cfs("50000", "abc", &c, &why), -1);
    assert_int_equal(fr_parse_cfs("0", "100000", &c, &why), -1);
    assert_int_equal(fr_parse_cfs("-2", "100000", &c, &why), -1);
    assert_int_equal(fr_parse_cfs("x", "100000", &c, &why), -1);
    assert_int_equal(fr_parse_cfs("", "100000", &c, &why), -1);
}

static void test_limit_u64(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(fr_parse_limit_u64("max\n", false, &v), 0);
    assert_int_equal(fr_parse_limit_u64("268435456\n", false, &v), 1);
    assert_true(v == 268435456);
    assert_int_equal(fr_parse_limit_u64("9223372036854771712", true, &v), 1);
    assert_true(v == 9223372036854771712ull);
    assert_int_equal(fr_parse_limit_u64("-1", true, &v), 0);
    assert_int_equal(fr_parse_limit_u64("-1", false, &v), -1);
    assert_int_equal(fr_parse_limit_u64("-5", true, &v), -1);
    assert_int_equal(fr_parse_limit_u64("", false, &v), -1);
    assert_int_equal(fr_parse_limit_u64("lots", false, &v), -1);
    assert_int_equal(fr_parse_limit_u64("12abc", false, &v), -1);
    assert_int_equal(fr_parse_limit_u64("99999999999999999999999", false, &v), -1);
    assert_int_equal(fr_parse_limit_u64(NULL, false, &v), -1);
    /* 2^63 and up is no kernel value and no reportable integer: a pids.max,
     * pids.current or cpu.weight of 18446744073709551615 was reported as a
     * negative number (fuzz_detect's integer check flags it). */
    assert_int_equal(fr_parse_limit_u64("18446744073709551615", false, &v), -1);
    assert_int_equal(fr_parse_limit_u64("9223372036854775807", false, &v), -1); /* 2^63 as a double */
    assert_int_equal(fr_parse_limit_u64("9223372036854774784", false, &v), 1);  /* 2^63 - 1024, the last below */
    /* Text too long for the parser's buffer is refused, not cut: the tail
     * past 63 bytes is part of what the file says (found by fuzz_cgroup_files). */
    char longer[128];
    snprintf(longer, sizeof longer, "5%70seF", "");
    assert_int_equal(fr_parse_limit_u64(longer, false, &v), -1);
    snprintf(longer, sizeof longer, "max%70sx", "");
    assert_int_equal(fr_parse_limit_u64(longer, false, &v), -1);
    snprintf(longer, sizeof longer, "4096%58s", ""); /* 62 bytes: still a number with blanks */
    assert_int_equal(fr_parse_limit_u64(longer, false, &v), 1);
    assert_true(v == 4096);
}

/* ---- memory ---- */

static void test_meminfo(void **state)
{
    (void)state;
    assert_true(fr_parse_meminfo_total("MemTotal:       24684096 kB\nMemFree: 1 kB\n") == 24684096ull * 1024);
    assert_true(fr_parse_meminfo_total("MemFree: 1 kB\nMemTotal: 1024 kB") == 1048576);
    assert_true(fr_parse_meminfo_total("MemTotal: lots kB\n") == 0);
    assert_true(fr_parse_meminfo_total("MemTotal: 1024\n") == 0);
    assert_true(fr_parse_meminfo_total("MemTotal: 0 kB\n") == 0);
    assert_true(fr_parse_meminfo_total("MemFree: 1 kB\n") == 0);
    assert_true(fr_parse_meminfo_total("") == 0);
    assert_true(fr_parse_meminfo_total("MemTotal: 99999999999999999999 kB\n") == 0);
    /* Above 1 EiB is garbage too: 14830663215980416 kB (1.5e19 bytes) was
     * reported as a negative total (found by fuzz_detect). */
    assert_true(fr_parse_meminfo_total("MemTotal: 14830663215980416 kB\n") == 0);
    assert_true(fr_parse_meminfo_total("MemTotal: 1125899906842624 kB\n") == FR_SIZE_MAX); /* 1 EiB */
    assert_true(fr_parse_meminfo_total("MemTotal: 1125899906842625 kB\n") == 0);
}

static void test_memory_stat(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_true(
        fr_parse_memory_stat_hier("cache 0\nhierarchical_memory_limit 1073741824\nhierarchical_memsw_limit 5\n", &v));
    assert_true(v == 1073741824);
    assert_false(fr_parse_memory_stat_hier("cache 0\nrss 5\n", &v));
    assert_false(fr_parse_memory_stat_hier("hierarchical_memory_limit x\n", &v));
    assert_false(fr_parse_memory_stat_hier("", &v));
}

static void test_tmpfs_size(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(fr_parse_tmpfs_size("65536k", 0, &v), 1);
    assert_true(v == 67108864);
    assert_int_equal(fr_parse_tmpfs_size("1g", 0, &v), 1);
    assert_true(v == 1073741824);
    assert_int_equal(fr_parse_tmpfs_size("64M", 0, &v), 1);
    assert_true(v == 67108864);
    assert_int_equal(fr_parse_tmpfs_size("4096", 0, &v), 1);
    assert_true(v == 4096);
    assert_int_equal(fr_parse_tmpfs_size("50%", 1000, &v), 1);
    assert_true(v == 500);
    assert_int_equal(fr_parse_tmpfs_size("0", 0, &v), 0);    /* unlimited */
    assert_int_equal(fr_parse_tmpfs_size("50%", 0, &v), -1); /* no total to resolve it */
    assert_int_equal(fr_parse_tmpfs_size("150%", 1000, &v), -1);
    assert_int_equal(fr_parse_tmpfs_size("lotsk", 0, &v), -1);
    assert_int_equal(fr_parse_tmpfs_size("", 0, &v), -1);
    assert_int_equal(fr_parse_tmpfs_size("k", 0, &v), -1);
    assert_int_equal(fr_parse_tmpfs_size("99999999999999999999e", 0, &v), -1);
    assert_int_equal(fr_parse_tmpfs_size("16e", 0, &v), -1); /* 2^64: overflow */
    /* Above 1 EiB is no size (fuzz_detect's integer check flags "15e",
     * which the report printed as a negative integer). */
    assert_int_equal(fr_parse_tmpfs_size("15e", 0, &v), -1);
    assert_int_equal(fr_parse_tmpfs_size("1025p", 0, &v), -1);
    assert_int_equal(fr_parse_tmpfs_size("1e", 0, &v), 1);
    assert_true(v == FR_SIZE_MAX);
    assert_int_equal(fr_parse_tmpfs_size(NULL, 0, &v), -1);
    /* Refused, not cut to the parser's 64 bytes: "7", blanks, then junk
     * is not 7 (found by fuzz_cgroup_files). */
    char longer[128];
    snprintf(longer, sizeof longer, "7%70sjunk", "");
    assert_int_equal(fr_parse_tmpfs_size(longer, 0, &v), -1);
}

/* ---- schedulers ---- */

static void test_slurm_cpus_per_node(void **state)
{
    (void)state;
    assert_int_equal(fr_parse_slurm_cpus_per_node("4(x2)", 0), 4);
    assert_int_equal(fr_parse_slurm_cpus_per_node("4(x2)", 1), 4);
    assert_int_equal(fr_parse_slurm_cpus_per_node("4(x2)", 2), -1);
    assert_int_equal(fr_parse_slurm_cpus_per_node("72(x2),36", 2), 36);
    assert_int_equal(fr_parse_slurm_cpus_per_node("8(x1),4(x2)", 1), 4);
    assert_int_equal(fr_parse_slurm_cpus_per_node("16", 0), 16);
    const char *bad[] = {"", "4(x", "4(x2", "4(2)", "x", "4,", "0", "4(x0)", "4;5", "4(x2)junk", "-4"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (fr_parse_slurm_cpus_per_node(bad[i], 0) != -1)
            fail_msg("'%s' parsed", bad[i]);
    assert_int_equal(fr_parse_slurm_cpus_per_node("4", -1), -1);
    /* Repeat counts that add up past LONG_MAX are garbage (the sum was a
     * signed overflow: UBSan under fuzz_scheduler). */
    assert_int_equal(fr_parse_slurm_cpus_per_node("1(x9223372036854775807),1(x9223372036854775807)", 0), -1);
    assert_int_equal(fr_parse_slurm_cpus_per_node("2(x9223372036854775806),1(x1)", 9223372036854775806L), 1);
    assert_int_equal(fr_parse_slurm_cpus_per_node(NULL, 0), -1);
}

static void test_classad(void **state)
{
    (void)state;
    const char *ad =
        "TotalCpus = 256.0\nDetectedCpus = 256\n  cpus   =   8\nMemory=16000\nName = \"slot1@x\"\nDisk = Memory * 2\n";
    double v = 0;
    assert_int_equal(fr_parse_classad_number(ad, "Cpus", &v), 1); /* case-insensitive, not TotalCpus */
    assert_double(v, 8);
    assert_int_equal(fr_parse_classad_number(ad, "Memory", &v), 1);
    assert_double(v, 16000);
    assert_int_equal(fr_parse_classad_number(ad, "TotalCpus", &v), 1);
    assert_double(v, 256);
    assert_int_equal(fr_parse_classad_number(ad, "Name", &v), -1); /* a string */
    assert_int_equal(fr_parse_classad_number(ad, "Disk", &v), -1); /* an expression */
    assert_int_equal(fr_parse_classad_number(ad, "Gpus", &v), 0);
    assert_int_equal(fr_parse_classad_number("Cpus = -1\n", "Cpus", &v), -1);
    assert_int_equal(fr_parse_classad_number("", "Cpus", &v), 0);
}

/* A scheduler's memory is a size: more than 1 EiB is noted and ignored,
 * never reported (found by fuzz_scheduler: a machine ad's "Memory = 1e20"
 * became 1e26 bytes, which `detect --json` printed as a negative integer). */
static bool noted(const struct fr_resources *r, const char *needle)
{
    for (int i = 0; i < r->nnotes; i++)
        if (strstr(r->notes[i], needle))
            return true;
    return false;
}

static void test_scheduler_memory_bound(void **state)
{
    (void)state;
    char path[] = "/tmp/fitrun-test-ad-XXXXXX", var[64];
    static const char ad[] = "Cpus = 2\nMemory = 1e20\n";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, ad, sizeof ad - 1), (int)(sizeof ad - 1));
    assert_int_equal(close(fd), 0);
    snprintf(var, sizeof var, "_CONDOR_MACHINE_AD=%s", path);
    struct fr_resources *r = calloc(1, sizeof *r);
    assert_non_null(r);

    char *both[] = {var, "SLURM_MEM_PER_NODE=2048", NULL};
    struct fr_dx x = {.sysroot = "/", .envp = both, .res = r};
    fr_detect_scheduler(&x);
    assert_true(r->cpu_scheduler.known && r->cpu_scheduler.value == 2);
    assert_true(noted(r, "(Memory): 1e+20 MB is more than 1 EiB: ignored"));
    assert_true(r->mem_scheduler.known && r->mem_scheduler.value == 2048.0 * 1048576); /* SLURM's is next */

    char *huge[] = {"SLURM_MEM_PER_NODE=1e13", NULL};
    memset(r, 0, sizeof *r);
    x.envp = huge;
    fr_detect_scheduler(&x);
    assert_false(r->mem_scheduler.known);
    assert_true(noted(r, "SLURM_MEM_PER_NODE=1e13: 1e+13 MB is more than 1 EiB: ignored"));

    char *most[] = {"SLURM_MEM_PER_NODE=1099511627776", NULL}; /* 2^40 MB = 1 EiB, the largest size */
    memset(r, 0, sizeof *r);
    x.envp = most;
    fr_detect_scheduler(&x);
    assert_true(r->mem_scheduler.known && r->mem_scheduler.value == (double)FR_SIZE_MAX);
    free(r);
    assert_int_equal(unlink(path), 0);
}

/* ---- notes ---- */

static void test_notes(void **state)
{
    (void)state;
    struct fr_resources *r = calloc(1, sizeof *r);
    assert_non_null(r);
    fr_detect_note(r, "same %d", 1);
    fr_detect_note(r, "same %d", 1); /* duplicates collapse */
    assert_int_equal(r->nnotes, 1);
    for (int i = 0; i < FR_NOTES_MAX + 10; i++)
        fr_detect_note(r, "note %d", i);
    assert_int_equal(r->nnotes, FR_NOTES_MAX); /* extra notes dropped, nothing overflows */
    char big[FR_NOTE_MAX * 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    memset(r, 0, sizeof *r);
    fr_detect_note(r, "%s", big);
    assert_int_equal((int)strlen(r->notes[0]), FR_NOTE_MAX - 1);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpulist_parse),
        cmocka_unit_test(test_cpulist_garbage),
        cmocka_unit_test(test_cpulist_format),
        cmocka_unit_test(test_unescape),
        cmocka_unit_test(test_mountinfo_line),
        cmocka_unit_test(test_opts),
        cmocka_unit_test(test_proc_cgroup),
        cmocka_unit_test(test_translate),
        cmocka_unit_test(test_cpu_max),
        cmocka_unit_test(test_cfs),
        cmocka_unit_test(test_limit_u64),
        cmocka_unit_test(test_meminfo),
        cmocka_unit_test(test_memory_stat),
        cmocka_unit_test(test_tmpfs_size),
        cmocka_unit_test(test_slurm_cpus_per_node),
        cmocka_unit_test(test_classad),
        cmocka_unit_test(test_scheduler_memory_bound),
        cmocka_unit_test(test_notes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
