/* test_python_pipes.c — what fitrun relies on when a worker's pipes carry
 * one job after another (launcher/runtime/python/pipes.c, collect.c,
 * job.c): the job goes framed (its length, then the job without
 * "expected"); a stream keeps at most its cap and discards the rest;
 * draining reads to EAGAIN, so that nothing of a job is left for the next
 * one; EOF says the writers are gone. Real pipes, as fitrun makes them. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../launcher/runtime/python/internal.h"
#include "fitrun/jobs.h"

static void nb_pipe(int p[2])
{
    assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
}

static void put(int fd, char c, size_t n)
{
    char buf[4096];
    memset(buf, c, sizeof buf);
    while (n) {
        size_t k = n < sizeof buf ? n : sizeof buf;
        assert_int_equal(write(fd, buf, k), (ssize_t)k);
        n -= k;
    }
}

static bool empty(int fd)
{
    char c;
    return read(fd, &c, 1) < 0 && errno == EAGAIN;
}

static void test_frame(void **state)
{
    (void)state;
    const char *line = "{\"expected\":[[2]],\"id\":\"j\\u00e9\",\"code\":\"def f(x):\\n    return x\","
                       "\"inputs\":[[1]],\"entry\":\"f\"}";
    struct fr_job job;
    const char *type;
    char err[256];
    assert_int_equal(fr_job_parse(line, strlen(line), 1, &job, &type, err, sizeof err), 0);
    struct pyslot s;
    memset(&s, 0, sizeof s);
    assert_int_equal(py_job_spans(&s, &job, err, sizeof err), 0);
    char out[512];
    size_t n = 0;
    for (int i = 0; i < s.iovcnt; i++) {
        assert_true(n + s.iov[i].iov_len <= sizeof out);
        memcpy(out + n, s.iov[i].iov_base, s.iov[i].iov_len);
        n += s.iov[i].iov_len;
    }
    const char *want = "{\"id\":\"j\\u00e9\",\"code\":\"def f(x):\\n    return x\",\"inputs\":[[1]],\"entry\":\"f\"}";
    uint32_t len;
    memcpy(&len, out, sizeof len);
    assert_int_equal(len, strlen(want));
    assert_int_equal(n, sizeof len + strlen(want));
    assert_memory_equal(out + sizeof len, want, strlen(want));
    fr_job_clear(&job);
}

static void test_discard(void **state)
{
    (void)state;
    int p[2];
    nb_pipe(p);
    put(p[1], 'x', 60000);
    size_t dropped = 0;
    assert_int_equal(py_fd_discard(p[0], 1, &dropped), 2); /* the bound: more may be there */
    assert_int_equal(py_fd_discard(p[0], 0, &dropped), 0);
    assert_int_equal(dropped, 60000);
    assert_true(empty(p[0]));
    assert_int_equal(py_fd_discard(p[0], 0, &dropped), 0); /* nothing there: nothing dropped */
    assert_int_equal(dropped, 60000);
    put(p[1], 'y', 10);
    close(p[1]);
    assert_int_equal(py_fd_discard(p[0], 0, &dropped), 1); /* its bytes, then EOF */
    assert_int_equal(dropped, 60010);
    close(p[0]);
}

static void test_stream_cap_then_discard(void **state)
{
    (void)state;
    int p[2];
    nb_pipe(p);
    struct stream st = {.fd = -1};
    py_stream_open(&st, p[0], 10);
    put(p[1], 'a', 8);
    put(p[1], 'b', 30);
    assert_int_equal(py_stream_read(&st), 2);
    assert_true(st.over);
    assert_int_equal(st.len, 10);
    assert_memory_equal(st.buf, "aaaaaaaabb", 10);
    /* Over: what comes is read and dropped, the kept bytes stay as they are. */
    put(p[1], 'c', 5000);
    assert_int_equal(py_stream_read(&st), 0);
    assert_int_equal(st.len, 10);
    assert_true(empty(p[0]));
    put(p[1], 'd', 100);
    assert_int_equal(py_stream_drain(&st), 0);
    assert_int_equal(st.len, 10);
    assert_memory_equal(st.buf, "aaaaaaaabb", 10);
    assert_true(empty(p[0]));

    /* The next job on the same pipe starts from nothing. */
    py_stream_trim(&st);
    py_stream_open(&st, p[0], 10);
    put(p[1], 'e', 3);
    assert_int_equal(py_stream_drain(&st), 0);
    assert_false(st.over);
    assert_int_equal(st.len, 3);
    assert_memory_equal(st.buf, "eee", 3);
    close(p[1]);
    assert_int_equal(py_stream_drain(&st), 1);
    close(p[0]);
    free(st.buf);
}

/* A stream that goes over while it is drained is still over, with its
 * first `limit` bytes, and nothing of it is left in the pipe. */
static void test_drain_goes_over(void **state)
{
    (void)state;
    int p[2];
    nb_pipe(p);
    struct stream st = {.fd = -1};
    py_stream_open(&st, p[0], 100);
    put(p[1], 'f', 50000);
    assert_int_equal(py_stream_drain(&st), 0);
    assert_true(st.over);
    assert_int_equal(st.len, 100);
    assert_true(empty(p[0]));
    close(p[1]);
    close(p[0]);
    free(st.buf);
}

/* A prediction may put its end in packet mode (O_DIRECT): each write is
 * a packet, and a read gives one packet at most. Draining still reads
 * them all, kept up to the cap. */
static void test_drain_packets(void **state)
{
    (void)state;
    int p[2];
    nb_pipe(p);
    assert_int_equal(fcntl(p[1], F_SETFL, O_DIRECT | O_NONBLOCK), 0);
    struct stream st = {.fd = -1};
    py_stream_open(&st, p[0], 10);
    for (int i = 0; i < 3; i++)
        assert_int_equal(write(p[1], "abcd", 4), 4);
    assert_int_equal(py_stream_read(&st), 0); /* one packet: more later */
    assert_int_equal(st.len, 4);
    for (int i = 0; i < 3; i++)
        assert_int_equal(write(p[1], "efgh", 4), 4);
    assert_int_equal(py_stream_drain(&st), 0);
    assert_true(st.over);
    assert_int_equal(st.len, 10);
    assert_memory_equal(st.buf, "abcdabcdab", 10);
    assert_true(empty(p[0]));
    close(p[1]);
    close(p[0]);
    free(st.buf);
}

/* Between jobs: what a child left unread of its job, and (when no EXITED
 * read them) what its streams hold, is dropped; EOF is -1. */
static void test_slot_drain(void **state)
{
    (void)state;
    int job[2], rep[2], out[2], err[2];
    nb_pipe(job);
    nb_pipe(rep);
    nb_pipe(out);
    nb_pipe(err);
    struct pyslot s;
    memset(&s, 0, sizeof s);
    s.pipes = (struct slot_pipes){.job_w = job[1], .job_r = job[0], .rep = rep[0], .out = out[0], .err = err[0]};
    assert_true(py_slot_pipes_ok(&s));
    uint32_t frame = 70000;
    assert_int_equal(write(job[1], &frame, sizeof frame), (ssize_t)sizeof frame);
    put(job[1], '{', 1000); /* a job its child never read */
    put(out[1], 'o', 100);
    /* One poll says which hold bytes. */
    assert_int_equal(py_slot_pipes_ready(&s), PY_PIPE_JOB | PY_PIPE_OUT);
    assert_int_equal(py_slot_pipes_drain(&s, PY_PIPE_JOB), 0);
    assert_true(empty(job[0]));
    assert_false(empty(out[0])); /* only the pipes asked for */
    assert_int_equal(py_slot_pipes_ready(&s), PY_PIPE_OUT);
    put(out[1], 'o', 100);
    put(rep[1], '{', 100);
    put(err[1], 'e', 100);
    assert_int_equal(py_slot_pipes_ready(&s), PY_PIPE_REPORT | PY_PIPE_OUT | PY_PIPE_ERR);
    assert_int_equal(py_slot_pipes_drain(&s, PY_PIPES_ALL), 0);
    assert_true(empty(out[0]) && empty(rep[0]) && empty(err[0]));
    assert_int_equal(py_slot_pipes_ready(&s), 0);
    close(err[1]);
    assert_int_equal(py_slot_pipes_ready(&s), PY_PIPE_ERR); /* EOF is readable */
    assert_int_equal(py_slot_pipes_drain(&s, PY_PIPE_OUT), 0);
    assert_int_equal(py_slot_pipes_drain(&s, PY_PIPES_ALL), -1);
    for (int i = 0; i < 2; i++) {
        close(job[i]);
        close(rep[i]);
        close(out[i]);
        if (i == 0)
            close(err[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame),
        cmocka_unit_test(test_discard),
        cmocka_unit_test(test_stream_cap_then_discard),
        cmocka_unit_test(test_drain_goes_over),
        cmocka_unit_test(test_drain_packets),
        cmocka_unit_test(test_slot_drain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
