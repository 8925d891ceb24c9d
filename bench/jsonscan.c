/* jsonscan — what scanning job lines costs, against jansson's parse.
 *
 *   build/bench/jsonscan [-n ROUNDS] JOBS.jsonl
 *
 * Every round scans every line of JOBS.jsonl with fr_json_line (what the
 * pool does to each job line) and parses it with json_loadb (the peer: a
 * tree, what the scan replaces), in an order that alternates between
 * rounds (interleaved: background load hits both alike). It prints, per
 * line in ns, the median over rounds of each, and the ratio scan/peer;
 * and it checks that both accept the same lines (they must).
 *
 * The machine is shared and noisy: read medians, run it twice. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fitrun/jsonscan.h"

struct line {
    const char *p;
    size_t n;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += r;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                buf = NULL;
            }
            buf = b;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Accepted lines; -1 when a line is not what the pool can use. */
static long scan_all(const struct line *l, size_t n)
{
    long ok = 0;
    for (size_t i = 0; i < n; i++) {
        struct fr_json_member *m;
        size_t nm;
        int rc = fr_json_line(l[i].p, l[i].n, &m, &nm);
        if (rc == FR_JSON_LINE_NOMEM)
            return -1;
        ok += rc == FR_JSON_LINE_OBJECT;
        free(m);
    }
    return ok;
}

static long parse_all(const struct line *l, size_t n)
{
    long ok = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *j = json_loadb(l[i].p, l[i].n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
        ok += j && json_is_object(j);
        json_decref(j);
    }
    return ok;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rounds = 21;
    if (argc == 4 && !strcmp(argv[1], "-n"))
        rounds = atoi(argv[2]);
    if ((argc != 2 && argc != 4) || rounds < 1) {
        fprintf(stderr, "usage: %s [-n ROUNDS] JOBS.jsonl\n", argv[0]);
        return 2;
    }
    size_t len;
    char *text = slurp(argv[argc - 1], &len);
    if (!text) {
        perror(argv[argc - 1]);
        return 1;
    }
    size_t nl = 0, cap = 1024;
    struct line *lines = malloc(cap * sizeof *lines);
    for (const char *p = text, *end = text + len; lines && p < end;) {
        const char *nlp = memchr(p, '\n', (size_t)(end - p));
        size_t n = nlp ? (size_t)(nlp - p) : (size_t)(end - p);
        if (nl == cap)
            lines = realloc(lines, (cap *= 2) * sizeof *lines);
        if (lines && n)
            lines[nl++] = (struct line){p, n};
        p += n + 1;
    }
    if (!lines || !nl) {
        fprintf(stderr, "%s: no lines\n", argv[argc - 1]);
        return 1;
    }
    uint64_t *scan = calloc((size_t)rounds, sizeof *scan), *peer = calloc((size_t)rounds, sizeof *peer);
    long scanned = 0, parsed = 0;
    for (int r = 0; r < rounds && scan && peer; r++) {
        for (int k = 0; k < 2; k++) {
            bool do_scan = (k == 0) == (r % 2 == 0);
            uint64_t t0 = now_ns();
            long ok = do_scan ? scan_all(lines, nl) : parse_all(lines, nl);
            uint64_t t = (now_ns() - t0) / nl;
            if (do_scan) {
                scan[r] = t;
                scanned = ok;
            } else {
                peer[r] = t;
                parsed = ok;
            }
        }
    }
    if (!scan || !peer || scanned < 0) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    qsort(scan, (size_t)rounds, sizeof *scan, cmp_u64);
    qsort(peer, (size_t)rounds, sizeof *peer, cmp_u64);
    printf("%zu lines (%.0f bytes each), %d rounds, median ns per line:\n", nl, (double)len / (double)nl, rounds);
    printf("  fr_json_line  %8llu\n  json_loadb    %8llu  (peer)\n  ratio         %8.3f\n",
           (unsigned long long)scan[rounds / 2], (unsigned long long)peer[rounds / 2],
           (double)scan[rounds / 2] / (double)peer[rounds / 2]);
    if (scanned != parsed) {
        fprintf(stderr, "disagreement: fr_json_line accepted %ld objects, json_loadb %ld\n", scanned, parsed);
        return 1;
    }
    free(scan);
    free(peer);
    free(lines);
    free(text);
    return 0;
}
