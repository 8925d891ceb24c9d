/* test_common.c — common/: the size, duration, bool, integer and double
 * parsers, fr_read_file, fr_path_join, fr_trim, fr_format_size,
 * fr_term_text, the identifier rule, the envp lookup, fr_self_exe and
 * fr_now_ns. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fitrun/common.h"

/* ---- sizes and durations ---- */

static uint64_t size_of(const char *s)
{
    uint64_t v = 0xdeadbeef;
    if (fr_parse_size(s, &v) != 0)
        fail_msg("fr_parse_size('%s') failed", s);
    return v;
}

static void test_parse_size(void **state)
{
    (void)state;
    assert_true(size_of("4096") == 4096);
    assert_true(size_of("0") == 0);
    assert_true(size_of("64k") == 65536);
    assert_true(size_of("64K") == 65536);
    assert_true(size_of("64KiB") == 65536);
    assert_true(size_of("64kb") == 65536);
    assert_true(size_of("512M") == 536870912);
    assert_true(size_of("2G") == 2147483648ull);
    assert_true(size_of("1.5GiB") == 1610612736ull);
    assert_true(size_of("1T") == 1099511627776ull);
    assert_true(size_of("100B") == 100);
    assert_true(size_of(" 64 k ") == 65536);
    assert_true(size_of(".5k") == 512);
    assert_true(size_of("1.5K") == 1536);
    assert_true(size_of("0.25k") == 256);
    assert_true(size_of("1.50000000000000000000000000000k") == 1536); /* trailing zeros change nothing */
    assert_true(size_of("3.") == 3);
    assert_true(size_of("1048576T") == FR_SIZE_MAX); /* the maximum, 1 EiB */
    assert_true(size_of("1152921504606846976") == FR_SIZE_MAX);
    /* Fractions of a byte are errors, never truncated: "memory = 0.5" must
     * not become 0 (= no limit). */
    const char *bad[] = {"",
                         " ",
                         "-1",
                         "+1",
                         "k",
                         "64kk",
                         "64 k b",
                         "1e3",
                         "0x10",
                         "inf",
                         "nan",
                         "1.2.3",
                         "64Q",
                         "18446744073709551616",
                         "16777216T",
                         "1 2",
                         "0.5",
                         "1.3K",
                         "0.1k",
                         "1.0000001",
                         "1152921504606846977",
                         "1048577T",
                         "1048576.001T",
                         ".",
                         "1.0000000000000000001k",
                         "99999999999999999999999999999999999999999999T"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v;
        if (fr_parse_size(bad[i], &v) != -1)
            fail_msg("fr_parse_size('%s') accepted (%llu)", bad[i], (unsigned long long)v);
    }
    uint64_t v;
    assert_int_equal(fr_parse_size(NULL, &v), -1);

    /* The _why form says why, in words. */
    const char *why = NULL;
    assert_int_equal(fr_parse_size_why("0.5", &v, &why), -1);
    assert_string_equal(why, "not a whole number of bytes");
    assert_int_equal(fr_parse_size_why("1048577T", &v, &why), -1);
    assert_non_null(strstr(why, "maximum"));
    assert_int_equal(fr_parse_size_why("2Q", &v, &why), -1);
    assert_non_null(strstr(why, "unit"));
    assert_int_equal(fr_parse_size_why("abc", &v, &why), -1);
    assert_string_equal(why, "not a number");
}

static uint64_t ms_of(const char *s)
{
    uint64_t v = 0xdeadbeef;
    if (fr_parse_duration_ms(s, &v) != 0)
        fail_msg("fr_parse_duration_ms('%s') failed", s);
    return v;
}

static void test_parse_duration(void **state)
{
    (void)state;
    assert_true(ms_of("2s") == 2000);
    assert_true(ms_of("2") == 2000); /* bare number = seconds */
    assert_true(ms_of("500ms") == 500);
    assert_true(ms_of("1.5s") == 1500);
    assert_true(ms_of("2m") == 120000);
    assert_true(ms_of("2min") == 120000);
    assert_true(ms_of("1h") == 3600000);
    assert_true(ms_of("250us") == 1); /* rounded up to whole ms */
    assert_true(ms_of("1000us") == 1);
    assert_true(ms_of("1001us") == 2);
    assert_true(ms_of("0") == 0);
    assert_true(ms_of(" 3 sec ") == 3000);
    assert_true(ms_of("0.0001s") == 1);
    assert_true(ms_of("0.5ms") == 1);
    assert_true(ms_of("1.0005s") == 1001);
    assert_true(ms_of("597h") == 2149200000ull);       /* beyond 2^31 ms: fine */
    assert_true(ms_of("8760h") == FR_DURATION_MAX_MS); /* the maximum, 365 days */
    assert_true(ms_of("31536000") == FR_DURATION_MAX_MS);
    assert_true(ms_of("31536000000ms") == FR_DURATION_MAX_MS);
    assert_true(ms_of("0.000000000000000001s") == 1); /* never rounded to 0 */
    /* Beyond the maximum, however written: no value can wrap (as
     * 18446744073710ms x 10^6 ns would) or overflow a later conversion. */
    const char *bad[] = {"",
                         "s",
                         "-1s",
                         "+1s",
                         "1ns",
                         "1d",
                         "1e3s",
                         "inf",
                         "1 s s",
                         "99999999999999999h",
                         "8760.001h",
                         "8761h",
                         "31536000001ms",
                         "31536000.001",
                         "18446744073710ms",
                         "99999999999999s",
                         "18446744073709551616",
                         "525601m"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v;
        if (fr_parse_duration_ms(bad[i], &v) != -1)
            fail_msg("fr_parse_duration_ms('%s') accepted (%llu)", bad[i], (unsigned long long)v);
    }
    uint64_t v;
    assert_int_equal(fr_parse_duration_ms(NULL, &v), -1);
    const char *why = NULL;
    assert_int_equal(fr_parse_duration_why("18446744073710ms", &v, &why), -1);
    assert_non_null(strstr(why, "365 days"));
    /* a value near 1 s with too many digits after the point is not "too large" */
    assert_int_equal(fr_parse_duration_why("1.00000000000000000000000001s", &v, &why), -1);
    assert_string_equal(why, "too many decimals");
    assert_int_equal(fr_parse_duration_why("100000000000000000000000000s", &v, &why), -1);
    assert_string_equal(why, "too large");
}

/* ---- integers, doubles, bools ---- */

static void test_parse_ints(void **state)
{
    (void)state;
    int64_t i;
    uint64_t u;
    assert_int_equal(fr_parse_i64("42", &i), 0);
    assert_true(i == 42);
    assert_int_equal(fr_parse_i64(" -7 \n", &i), 0);
    assert_true(i == -7);
    assert_int_equal(fr_parse_i64("-9223372036854775808", &i), 0);
    assert_true(i == INT64_MIN);
    assert_int_equal(fr_parse_i64("9223372036854775807", &i), 0);
    assert_int_equal(fr_parse_i64("9223372036854775808", &i), -1); /* overflow */
    assert_int_equal(fr_parse_i64("0x10", &i), -1);
    assert_int_equal(fr_parse_i64("5x", &i), -1);
    assert_int_equal(fr_parse_i64("1.5", &i), -1);
    assert_int_equal(fr_parse_i64("", &i), -1);
    assert_int_equal(fr_parse_i64("  ", &i), -1);
    assert_int_equal(fr_parse_i64("1 2", &i), -1);
    assert_int_equal(fr_parse_i64(NULL, &i), -1);

    assert_int_equal(fr_parse_u64("18446744073709551615", &u), 0);
    assert_true(u == UINT64_MAX);
    assert_int_equal(fr_parse_u64("18446744073709551616", &u), -1);
    assert_int_equal(fr_parse_u64("-1", &u), -1); /* strtoull would wrap it */
    assert_int_equal(fr_parse_u64(" -1", &u), -1);
    assert_int_equal(fr_parse_u64("7\n", &u), 0);
    assert_true(u == 7);
    assert_int_equal(fr_parse_u64("abc", &u), -1);
    assert_int_equal(fr_parse_u64("", &u), -1);
    assert_int_equal(fr_parse_u64(NULL, &u), -1);
}

static void test_parse_double(void **state)
{
    (void)state;
    double d;
    assert_int_equal(fr_parse_double("1.5", &d), 0);
    assert_true(d == 1.5);
    assert_int_equal(fr_parse_double(" 0.25\n", &d), 0);
    assert_true(d == 0.25);
    assert_int_equal(fr_parse_double("-2", &d), 0);
    assert_true(d == -2);
    assert_int_equal(fr_parse_double("1e3", &d), 0);
    assert_true(d == 1000);
    assert_int_equal(fr_parse_double("inf", &d), -1);
    assert_int_equal(fr_parse_double("nan", &d), -1);
    assert_int_equal(fr_parse_double("1e999", &d), -1);
    assert_int_equal(fr_parse_double("1.5x", &d), -1);
    assert_int_equal(fr_parse_double("", &d), -1);
    assert_int_equal(fr_parse_double("fast", &d), -1);
    assert_int_equal(fr_parse_double(NULL, &d), -1);
}

static void test_parse_bool(void **state)
{
    (void)state;
    const char *yes[] = {"true", "yes", "on", "1", "TRUE", "Yes", " on ", "On\n"};
    const char *no[] = {"false", "no", "off", "0", "FALSE", " No "};
    const char *bad[] = {"", " ", "2", "y", "n", "enabled", "truee", "true false", "a-very-long-string-value"};
    bool b;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        b = false;
        if (fr_parse_bool(yes[i], &b) != 0 || !b)
            fail_msg("'%s' is not true", yes[i]);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        b = true;
        if (fr_parse_bool(no[i], &b) != 0 || b)
            fail_msg("'%s' is not false", no[i]);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (fr_parse_bool(bad[i], &b) != -1)
            fail_msg("'%s' accepted", bad[i]);
    assert_int_equal(fr_parse_bool(NULL, &b), -1);
}

/* ---- files and paths ---- */

static char tmpdir[] = "/tmp/fitrun-test-util-XXXXXX";

static int make_tmpdir(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Write `len` bytes of 'a' (or `content`) to tmpdir/name; returns the path. */
static const char *write_file(const char *name, const char *content, size_t len)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(write(fd, content ? content + i : "a", 1), 1);
    assert_int_equal(close(fd), 0);
    return path;
}

static void test_read_file(void **state)
{
    (void)state;
    size_t len = 99;
    const char *p = write_file("small", "hello\nworld\n", 12);
    char *s = fr_read_file(p, 4096, &len);
    assert_non_null(s);
    assert_string_equal(s, "hello\nworld\n");
    assert_int_equal(len, 12);
    free(s);

    p = write_file("empty", NULL, 0);
    s = fr_read_file(p, 4096, &len);
    assert_non_null(s);
    assert_string_equal(s, "");
    assert_int_equal(len, 0);
    free(s);

    /* Larger than max: EFBIG, small and big (several buffer growths). */
    p = write_file("thirteen", NULL, 13);
    errno = 0;
    assert_null(fr_read_file(p, 12, NULL));
    assert_int_equal(errno, EFBIG);
    p = write_file("big", NULL, 20000);
    errno = 0;
    assert_null(fr_read_file(p, 10000, NULL));
    assert_int_equal(errno, EFBIG);
    s = fr_read_file(p, 1 << 20, &len); /* grows its buffer past 4096 */
    assert_non_null(s);
    assert_int_equal(len, 20000);
    assert_int_equal(strlen(s), 20000);
    free(s);

    errno = 0;
    assert_null(fr_read_file("/nonexistent/fitrun-test", 100, NULL));
    assert_int_equal(errno, ENOENT);
    errno = 0;
    assert_null(fr_read_file(tmpdir, 100, NULL)); /* a directory */
    assert_int_equal(errno, EISDIR);

    /* /proc files report size 0 in stat(): reading must not rely on it. */
    s = fr_read_file("/proc/self/status", 1 << 20, &len);
    assert_non_null(s);
    assert_non_null(strstr(s, "Cpus_allowed_list:"));
    free(s);
}

/* common.h: "EFBIG when the file is larger than max". A file of EXACTLY max
 * bytes is not larger, so it must be read. BUG in common.c (reported, not
 * fixed here: not my file): fr_read_file() stops when its buffer holds
 * max bytes and returns EFBIG without checking for end of file, so files
 * of exactly `max` bytes fail, for every max (4096-byte cgroup reads of
 * long cpusets, a 12-byte "-1" and friends in tests). Fix: when used == max,
 * try to read one more byte and fail only if that read returns data. */
static void test_read_file_exactly_max(void **state)
{
    (void)state;
    size_t len = 0;
    const char *p = write_file("twelve", "hello world\n", 12);
    errno = 0;
    char *s = fr_read_file(p, 12, &len);
    if (!s)
        fail_msg("fr_read_file(12-byte file, max 12) failed: %s", strerror(errno));
    assert_int_equal(len, 12);
    free(s);

    p = write_file("empty0", NULL, 0);
    s = fr_read_file(p, 0, &len); /* an empty file fits in max 0 */
    if (!s)
        fail_msg("fr_read_file(empty file, max 0) failed: %s", strerror(errno));
    free(s);

    p = write_file("page", NULL, 8192);
    s = fr_read_file(p, 8192, &len);
    if (!s)
        fail_msg("fr_read_file(8192-byte file, max 8192) failed: %s", strerror(errno));
    assert_int_equal(len, 8192);
    free(s);
}

/* Only regular files are read. A FIFO with no writer must not block the
 * open or the read (detection over a planted sysroot hung here), a device
 * that never ends (/dev/zero) must not be read at all, and the answer must
 * be immediate; so must a FIFO that does have a writer. */
static void test_read_file_special(void **state)
{
    (void)state;
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    errno = 0;
    assert_null(fr_read_file(fifo, 4096, NULL));
    assert_int_equal(errno, EINVAL);
    assert_string_equal(fr_read_strerror(EINVAL), "not a regular file (a FIFO, device or socket)");

    int w = open(fifo, O_RDWR | O_NONBLOCK); /* a writer that never writes */
    assert_true(w >= 0);
    errno = 0;
    assert_null(fr_read_file(fifo, 4096, NULL));
    assert_int_equal(errno, EINVAL);
    close(w);

    const char *devices[] = {"/dev/zero", "/dev/null", "/dev/urandom"};
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
        errno = 0;
        if (fr_read_file(devices[i], 1 << 20, NULL) || errno != EINVAL)
            fail_msg("%s: not refused as a non-regular file (errno %d)", devices[i], errno);
    }
    /* A symlink to a device is the device. */
    char link[256];
    snprintf(link, sizeof link, "%s/zero-link", tmpdir);
    assert_int_equal(symlink("/dev/zero", link), 0);
    errno = 0;
    assert_null(fr_read_file(link, 1 << 20, NULL));
    assert_int_equal(errno, EINVAL);
    assert_string_equal(fr_read_strerror(EISDIR), "a directory, not a regular file");
    assert_string_equal(fr_read_strerror(ENOENT), strerror(ENOENT));
}

static void test_path_join(void **state)
{
    (void)state;
    char buf[64];
    assert_string_equal(fr_path_join(buf, sizeof buf, "/", "/proc/self/cgroup"), "/proc/self/cgroup");
    assert_string_equal(fr_path_join(buf, sizeof buf, NULL, "/proc"), "/proc");
    assert_string_equal(fr_path_join(buf, sizeof buf, "", "/proc"), "/proc");
    assert_string_equal(fr_path_join(buf, sizeof buf, "/fx/tree", "/proc"), "/fx/tree/proc");
    assert_string_equal(fr_path_join(buf, sizeof buf, "/fx/tree/", "/proc"), "/fx/tree/proc");
    assert_string_equal(fr_path_join(buf, sizeof buf, "/fx/tree///", "/proc"), "/fx/tree/proc");
    assert_string_equal(fr_path_join(buf, sizeof buf, "/fx", "rel"), "/fx/rel");
    assert_string_equal(fr_path_join(buf, sizeof buf, "/fx", "/a b/c:d"), "/fx/a b/c:d");
    char small[8];
    errno = 0;
    assert_null(fr_path_join(small, sizeof small, "/fx/tree", "/proc"));
    assert_int_equal(errno, ENAMETOOLONG);
    assert_null(fr_path_join(small, sizeof small, "/", "/1234567")); /* 8 bytes + NUL: too long */
    assert_string_equal(fr_path_join(small, sizeof small, "/", "/123456"), "/123456");
}

static void test_trim(void **state)
{
    (void)state;
    char a[] = "  hello world \n\t";
    assert_string_equal(fr_trim(a), "hello world");
    char b[] = "";
    assert_string_equal(fr_trim(b), "");
    char c[] = " \n ";
    assert_string_equal(fr_trim(c), "");
    char d[] = "x";
    assert_string_equal(fr_trim(d), "x");
}

static void test_format_size(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(fr_format_size(0, buf, sizeof buf), "0 B");
    assert_string_equal(fr_format_size(1023, buf, sizeof buf), "1023 B");
    assert_string_equal(fr_format_size(1024, buf, sizeof buf), "1.0 KiB");
    assert_string_equal(fr_format_size(1536, buf, sizeof buf), "1.5 KiB");
    assert_string_equal(fr_format_size(268435456, buf, sizeof buf), "256.0 MiB");
    assert_string_equal(fr_format_size(1099511627776ull, buf, sizeof buf), "1.0 TiB");
    assert_string_equal(fr_format_size(UINT64_MAX, buf, sizeof buf), "16.0 EiB");
    char tiny[4];
    assert_string_equal(fr_format_size(268435456, tiny, sizeof tiny), "256");
}

/* Text from jobs on a terminal: shown, never sent. */
static void test_term_text(void **state)
{
    (void)state;
    char buf[256];
#define T(in, want)                                                                                                    \
    do {                                                                                                               \
        const char in_[] = in;                                                                                         \
        fr_term_text(in_, sizeof in_ - 1, buf, sizeof buf);                                                            \
        if (strcmp(buf, want))                                                                                         \
            fail_msg("fr_term_text(%s): got '%s', want '%s'", #in, buf, want);                                         \
    } while (0)
    T("ValueError", "ValueError");
    T("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"); /* UTF-8 kept */
    /* the forged summary line of the hostile corpus */
    T("X\x1b[2K\rfitrun: done\xe2\x80\xa6\nFORGED\x07", "X\\x1b[2K\\rfitrun: done\xe2\x80\xa6\\nFORGED\\x07");
    T("a\tb\x00"
      "c\x7f",
      "a\\tb\\x00c\\x7f");
    T("\xc2\x9b"
      "31m",
      "\\u009b31m"); /* C1 CSI */
    T("\xe2\x80\xae"
      "txt.exe",
      "\\u202etxt.exe");                               /* right-to-left override */
    T("\xe2\x81\xa6x\xe2\x80\xa8", "\\u2066x\\u2028"); /* isolate, line separator */
    T("\xff\xc3(", "\\xff\\xc3(");                     /* not UTF-8 */
    T("\xef\xbb\xbf"
      "bom",
      "\\ufeffbom");
    /* Cut to fit, never in the middle of an escape or a character. */
    char small[8];
    assert_string_equal(fr_term_text("abcdefghij", 10, small, sizeof small), "abcd...");
    assert_string_equal(fr_term_text("abcdefg", 7, small, sizeof small), "abcdefg");
    assert_string_equal(fr_term_text("ab\x1b"
                                     "cdefg",
                                     8, small, sizeof small),
                        "ab...");
    assert_string_equal(fr_term_text("\xe2\x9c\x93\xe2\x9c\x93\xe2\x9c\x93", 9, small, sizeof small),
                        "\xe2\x9c\x93...");
    char tiny[3];
    assert_string_equal(fr_term_text("abcdef", 6, tiny, sizeof tiny), "..");
    assert_string_equal(fr_term_text(NULL, 5, buf, sizeof buf), "");
#undef T
}

/* One identifier rule for every caller: ASCII letters, digits and _, not
 * starting with a digit. */
static void test_identifier(void **state)
{
    (void)state;
    const char *good[] = {"transform", "_", "_x1", "A", "OMP_NUM_THREADS", "a9_Z"};
    const char *bad[] = {"", "1a", "a-b", "a b", "a.b", "a=b", "caf\xc3\xa9", "\xd0\xb0", "x\x80", "$x", "a\tb"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (!fr_is_identifier(good[i]))
            fail_msg("'%s' should be an identifier", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (fr_is_identifier(bad[i]))
            fail_msg("'%s' should not be an identifier", bad[i]);
    assert_false(fr_is_identifier(NULL));
}

/* An envp lookup: the whole name, the first entry, NULLs tolerated. */
static void test_env_lookup(void **state)
{
    (void)state;
    char *envp[] = {"PATHX=no", "PATH=/bin", "EMPTY=", "PATH=/second", "NOEQUALS", NULL};
    assert_string_equal(fr_env_lookup(envp, "PATH"), "/bin");
    assert_string_equal(fr_env_lookup(envp, "EMPTY"), "");
    assert_null(fr_env_lookup(envp, "PAT"));
    assert_null(fr_env_lookup(envp, "NOEQUALS"));
    assert_null(fr_env_lookup(envp, "MISSING"));
    assert_null(fr_env_lookup(NULL, "PATH"));
    assert_null(fr_env_lookup(envp, NULL));
}

/* The running binary: this test's own path, or a clean error. */
static void test_self_exe(void **state)
{
    (void)state;
    char buf[PATH_MAX], small[4];
    assert_int_equal(fr_self_exe(buf, sizeof buf), 0);
    assert_true(buf[0] == '/');
    assert_non_null(strstr(buf, "test_common"));
    struct stat st;
    assert_int_equal(stat(buf, &st), 0);
    errno = 0;
    assert_int_equal(fr_self_exe(small, sizeof small), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    assert_string_equal(small, "");
}

static void test_now_ns(void **state)
{
    (void)state;
    uint64_t a = fr_now_ns(), b = fr_now_ns();
    assert_true(a > 0);
    assert_true(b >= a); /* monotonic: never goes back */
}

/* Use ms of this process's CPU (its own clock). */
static void burn_ms(long ms)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    do
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

/* In a child: fork a grandchild that burns ms and exits. Waited for when
 * reap (its CPU is then the child's cutime), else left a zombie: known to
 * have exited, not reaped (WNOWAIT). */
static void grandchild(long ms, bool reap)
{
    pid_t g = fork();
    if (g == 0) {
        burn_ms(ms);
        _exit(0);
    }
    siginfo_t info;
    if (g > 0)
        (void)waitid(P_PID, (id_t)g, &info, WEXITED | (reap ? 0 : WNOWAIT));
}

/* The CPU of a tree counts a grandchild that was waited for (through its
 * parent's cutime), one that exited and was not (a zombie), one still
 * alive, and the child itself; its descendants' CPU, the last two only; a
 * gone pid, none. */
static void test_tree_cpu(void **state)
{
    (void)state;
    int p[2], q[2];
    assert_int_equal(pipe(p), 0);
    pid_t c = fork();
    assert_true(c >= 0);
    if (c == 0) {
        setpgid(0, 0); /* the test kills the whole tree by its group */
        close(p[0]);
        burn_ms(60);
        grandchild(60, true);
        grandchild(60, false);
        if (pipe(q) < 0)
            _exit(1);
        if (fork() == 0) {
            burn_ms(60);
            (void)!write(q[1], "x", 1);
            pause();
            _exit(0);
        }
        char y;
        (void)!read(q[0], &y, 1);
        (void)!write(p[1], "x", 1);
        pause();
        _exit(0);
    }
    close(p[1]);
    char x;
    assert_int_equal(read(p[0], &x, 1), 1);
    close(p[0]);
    uint64_t below = fr_descendants_cpu_ns(c);
    uint64_t ns = fr_tree_cpu_ns(c);
    kill(-c, SIGKILL);
    waitpid(c, NULL, 0);
    /* 4 x 60 ms; the reaped one in whole clock ticks (10 ms), truncated. */
    assert_true(ns >= 220u * 1000000u);
    /* Below the child: the zombie and the live one; the reaped one is the
     * child's own (its cutime), and so is its clock. */
    assert_true(below >= 110u * 1000000u);
    assert_true(ns >= below + 110u * 1000000u);
    assert_int_equal(fr_descendants_cpu_ns(c), 0);
    assert_int_equal(fr_tree_cpu_ns(c), 0);
    assert_int_equal(fr_tree_cpu_ns(0), 0);
}

/* fr_send_fds: the message and every descriptor arrive, as the same open
 * files (fr_received_fds takes them out, and closes those beyond its max);
 * too many descriptors is EINVAL; a peer that is gone is EPIPE, not a
 * SIGPIPE death (MSG_NOSIGNAL). */
static void test_send_fds(void **state)
{
    (void)state;
    int sv[2], p[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    assert_int_equal(fr_send_fds(sv[0], "hello", 5, p, 2, MSG_NOSIGNAL), 0);
    assert_int_equal(fr_send_fds(sv[0], "bare", 4, NULL, 0, MSG_NOSIGNAL), 0);
    char buf[16];
    union {
        char buf[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {buf, sizeof buf};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    assert_int_equal(recvmsg(sv[1], &mh, MSG_CMSG_CLOEXEC), 5);
    assert_memory_equal(buf, "hello", 5);
    int got[2] = {-1, -1};
    assert_int_equal(fr_received_fds(&mh, got, 2), 2);
    for (int i = 0; i < 2; i++) {
        struct stat a, b;
        assert_int_equal(fstat(got[i], &a), 0);
        assert_int_equal(fstat(p[i], &b), 0);
        assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
        close(got[i]);
    }
    mh.msg_controllen = sizeof u.buf;
    assert_int_equal(recvmsg(sv[1], &mh, 0), 4);
    assert_int_equal(fr_received_fds(&mh, got, 2), 0);
    /* Beyond max: closed, not left open. */
    assert_int_equal(fr_send_fds(sv[0], "two", 3, p, 2, MSG_NOSIGNAL), 0);
    mh.msg_controllen = sizeof u.buf;
    assert_int_equal(recvmsg(sv[1], &mh, MSG_CMSG_CLOEXEC), 3);
    int fds_before = 0, fds_after = 0;
    for (int fd = 0; fd < 1024; fd++)
        fds_before += fcntl(fd, F_GETFD) >= 0;
    assert_int_equal(fr_received_fds(&mh, got, 1), 1);
    for (int fd = 0; fd < 1024; fd++)
        fds_after += fcntl(fd, F_GETFD) >= 0;
    assert_int_equal(fds_after, fds_before - 1);
    close(got[0]);
    const int five[5] = {p[0], p[0], p[0], p[0], p[0]};
    errno = 0;
    assert_int_equal(fr_send_fds(sv[0], "x", 1, five, 5, 0), -1);
    assert_int_equal(errno, EINVAL);
    close(sv[1]);
    errno = 0;
    assert_int_equal(fr_send_fds(sv[0], "x", 1, p, 1, MSG_NOSIGNAL), -1);
    assert_int_equal(errno, EPIPE);
    close(sv[0]);
    close(p[0]);
    close(p[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test(test_parse_ints),
        cmocka_unit_test(test_parse_double),
        cmocka_unit_test(test_parse_bool),
        cmocka_unit_test(test_read_file),
        cmocka_unit_test(test_read_file_exactly_max),
        cmocka_unit_test(test_read_file_special),
        cmocka_unit_test(test_path_join),
        cmocka_unit_test(test_trim),
        cmocka_unit_test(test_format_size),
        cmocka_unit_test(test_now_ns),
        cmocka_unit_test(test_term_text),
        cmocka_unit_test(test_identifier),
        cmocka_unit_test(test_env_lookup),
        cmocka_unit_test(test_self_exe),
        cmocka_unit_test(test_tree_cpu),
        cmocka_unit_test(test_send_fds),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
