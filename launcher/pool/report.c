/* report.c — what the user sees on stderr: the progress line while the run
 * goes, the status table and "Most common errors" at the end. stdout is
 * left to results (`--out -`). Text that came from jobs is printed through
 * fr_term_text (control characters shown, not sent); results files keep
 * the real bytes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

#define BAR_INTERVAL_NS (100ull * 1000 * 1000) /* redraw at most 10 times a second */
#define TOP_ERRORS 10

int fr_progress_parse(const char *s, enum fr_progress *out)
{
    static const char *names[] = {"auto", "bar", "plain", "none"};
    for (int i = 0; i < 4; i++) {
        if (!strcmp(s, names[i])) {
            *out = (enum fr_progress)i;
            return 0;
        }
    }
    return -1;
}

void stats_init(struct stats *s, enum fr_progress mode, int workers, long total, long skipped)
{
    memset(s, 0, sizeof *s);
    s->start_ns = fr_now_ns();
    s->workers = workers;
    s->total = total;
    s->skipped = skipped;
    if (mode == FR_PROGRESS_AUTO)
        mode = isatty(STDERR_FILENO) ? FR_PROGRESS_BAR : FR_PROGRESS_NONE;
    s->mode = mode;
    s->next_ns = s->start_ns + (mode == FR_PROGRESS_PLAIN ? FR_PROGRESS_PLAIN_S * 1000000000ull : 0);
}

void stats_free(struct stats *s)
{
    for (size_t i = 0; i < s->ntypes; i++)
        free(s->types[i].type);
    free(s->types);
    s->types = NULL;
    s->ntypes = s->captypes = 0;
}

void stats_add(struct stats *s, enum fr_status st, const char *error_type)
{
    if ((int)st >= 0 && st < STATUS_COUNT)
        s->counts[st]++;
    s->done++;
    if (!error_type || st == FR_STATUS_OK)
        return;
    for (size_t i = 0; i < s->ntypes; i++) {
        if (!strcmp(s->types[i].type, error_type)) {
            s->types[i].n++;
            return;
        }
    }
    if (s->ntypes == s->captypes) {
        size_t ncap = s->captypes ? s->captypes * 2 : 16;
        struct error_count *nt = realloc(s->types, ncap * sizeof *nt);
        if (!nt)
            return; /* the table is a courtesy; the results are what counts */
        s->types = nt;
        s->captypes = ncap;
    }
    char *t = strdup(error_type);
    if (!t)
        return;
    s->types[s->ntypes].type = t;
    s->types[s->ntypes++].n = 1;
}

static void fmt_duration(double sec, char *buf, size_t n)
{
    long t = sec < 0 ? 0 : sec > 8.64e6 ? 8640000 : (long)(sec + 0.5); /* <= 100 days */
    if (t >= 3600)
        snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%02ld:%02ld", t / 60, t % 60);
}

/* "ok 12  error 3  timeout 1" (non-zero statuses only). */
static void status_counts(const struct stats *s, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < STATUS_COUNT && o < n; i++) {
        if (!s->counts[i])
            continue;
        int w = snprintf(buf + o, n - o, "%s%s %ld", o ? "  " : "", fr_status_name((enum fr_status)i), s->counts[i]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

static int term_width(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    return 80;
}

static void draw_bar(struct stats *s, double elapsed, double rate)
{
    char el[32], eta[32], counts[256], line[1024];
    fmt_duration(elapsed, el, sizeof el);
    status_counts(s, counts, sizeof counts);
    int width = term_width();
    if (s->total > 0) {
        double frac = (double)s->done / (double)s->total;
        if (frac > 1)
            frac = 1;
        if (rate > 0)
            fmt_duration((double)(s->total - s->done) / rate, eta, sizeof eta);
        else
            snprintf(eta, sizeof eta, "?");
        int barw = width / 4;
        char bar[256];
        int filled = (int)(frac * barw);
        for (int i = 0; i < barw; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[barw] = '\0';
        snprintf(line, sizeof line, "%3d%% [%s] %ld/%ld [%s<%s, %.1f jobs/s] %s", (int)(frac * 100), bar, s->done,
                 s->total, el, eta, rate, counts);
    } else {
        snprintf(line, sizeof line, "%ld done [%s, %.1f jobs/s] %s", s->done, el, rate, counts);
    }
    /* Cut to the terminal so the line never wraps (a wrapped line cannot
     * be redrawn with \r). */
    if ((int)strlen(line) > width - 1)
        line[width - 1] = '\0';
    fprintf(stderr, "\r%s\033[K", line);
    fflush(stderr);
    s->drawn = true;
}

void progress_tick(struct stats *s, uint64_t now, bool force)
{
    if (s->mode == FR_PROGRESS_NONE || (!force && now < s->next_ns))
        return;
    double elapsed = (double)(now - s->start_ns) / 1e9;
    double rate = elapsed > 0 ? (double)s->done / elapsed : 0;
    if (s->mode == FR_PROGRESS_BAR) {
        draw_bar(s, elapsed, rate);
        s->next_ns = now + BAR_INTERVAL_NS;
        return;
    }
    char counts[256], eta[32] = "?";
    status_counts(s, counts, sizeof counts);
    if (s->total > 0 && rate > 0)
        fmt_duration((double)(s->total - s->done) / rate, eta, sizeof eta);
    if (s->total > 0)
        fprintf(stderr, "fitrun: progress %ld/%ld (%d%%) %.1f jobs/s ETA %s  %s\n", s->done, s->total,
                (int)(100.0 * (double)s->done / (double)s->total), rate, eta, counts);
    else
        fprintf(stderr, "fitrun: progress %ld done %.1f jobs/s  %s\n", s->done, rate, counts);
    s->next_ns = now + FR_PROGRESS_PLAIN_S * 1000000000ull;
}

void progress_finish(struct stats *s)
{
    if (s->mode != FR_PROGRESS_BAR)
        return;
    progress_tick(s, fr_now_ns(), true);
    fputc('\n', stderr); /* the final bar stays, like tqdm's */
    s->drawn = false;
}

void progress_clear(struct stats *s)
{
    if (!s->drawn)
        return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    s->drawn = false;
}

static int by_count(const void *a, const void *b)
{
    const struct error_count *x = a, *y = b;
    if (x->n != y->n)
        return x->n < y->n ? 1 : -1;
    return strcmp(x->type, y->type);
}

/* The launcher's own CPU (this process: not its workers, not the
 * predictions) per result, which is what caps one launcher's rate: a
 * launcher that spends 100 us a result feeds at most 10,000 results/s,
 * however many workers it has. The kernel's split between user and system
 * time is sampled at its clock ticks; the sum is exact. */
static void own_cpu_print(long done)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) < 0)
        return;
    double user = (double)fr_timeval_us(&ru.ru_utime), sys = (double)fr_timeval_us(&ru.ru_stime), n = (double)done;
    fprintf(stderr, "  fitrun's own CPU: %.0f ms, %.0f us per result (user %.0f, system %.0f)\n", (user + sys) / 1e3,
            (user + sys) / n, user / n, sys / n);
}

void summary_print(struct stats *s, const char *how)
{
    progress_clear(s);
    double elapsed = (double)(fr_now_ns() - s->start_ns) / 1e9;
    char line[1024];
    /* Built in a buffer and written with one fprintf per line: stderr is
     * unbuffered and other processes (jobs are dead by now, but not other
     * tools) may share it. */
    snprintf(line, sizeof line, "fitrun: %s: %ld result%s in %.1f s (%.1f jobs/s) with %d worker%s", how, s->done,
             s->done == 1 ? "" : "s", elapsed, elapsed > 0 ? (double)s->done / elapsed : 0.0, s->workers,
             s->workers == 1 ? "" : "s");
    if (s->skipped)
        snprintf(line + strlen(line), sizeof line - strlen(line), "; %ld already in the results file", s->skipped);
    fprintf(stderr, "%s\n", line);
    if (!s->done)
        return;
    own_cpu_print(s->done);
    fprintf(stderr, "  %-14s %8s %7s\n", "status", "count", "%");
    for (int i = 0; i < STATUS_COUNT; i++)
        if (s->counts[i])
            fprintf(stderr, "  %-14s %8ld %7.1f\n", fr_status_name((enum fr_status)i), s->counts[i],
                    100.0 * (double)s->counts[i] / (double)s->done);
    if (!s->ntypes)
        return;
    qsort(s->types, s->ntypes, sizeof *s->types, by_count);
    fprintf(stderr, "Most common errors:\n  %8s  %s\n", "count", "error_type");
    for (size_t i = 0; i < s->ntypes && i < TOP_ERRORS; i++) {
        /* error_type can be a prediction's own exception class name:
         * shown, never sent to the terminal as it is. */
        char shown[256];
        fr_term_text(s->types[i].type, strlen(s->types[i].type), shown, sizeof shown);
        fprintf(stderr, "  %8ld  %s\n", s->types[i].n, shown);
    }
    if (s->ntypes > TOP_ERRORS)
        fprintf(stderr, "  (%zu more error types)\n", s->ntypes - TOP_ERRORS);
}

void pool_say(struct fr_host *h, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    progress_clear(&h->stats);
    fr_warn("%s", msg);
}
