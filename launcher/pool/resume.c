/* resume.c — what an existing results file already holds (--resume).
 *
 * Results are appended whole lines at a time, in order (results.c), so a
 * fitrun killed hard can leave at most one torn line, at the end. It is cut off (ftruncate) so the
 * resumed run appends after a clean newline; the job it belonged to has no
 * complete result and runs again.
 *
 * A result names its input line; the line counts as done only when it
 * still holds the result's id, as `fitrun merge` checks. A jobs file that
 * changed since (line 2's id B replaced by D) must not have D skipped
 * silently: the first mismatch stops the run with its line and both ids.
 * A DuplicateId result also depends on an earlier line: it stands only
 * while one of them still holds its id. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fitrun/jobs.h"
#include "fitrun/common.h"
#include "internal.h"

void fr_resume_free(struct fr_resume *r)
{
    fr_idset_free(r->ids);
    fr_idset_free(r->lines);
    fr_idset_free(r->noline);
    for (size_t i = 0; i < r->ndone; i++)
        free(r->done[i].id);
    free(r->done);
    free(r->name);
    memset(r, 0, sizeof *r);
}

/* Remember which id the result of `line` carries (the first result of a
 * line wins, as in merge). -1 on ENOMEM. */
static int remember(struct fr_resume *r, const struct fr_result_key *k, long rline)
{
    if (r->ndone == r->capdone) {
        size_t ncap = r->capdone ? r->capdone * 2 : 256;
        struct fr_resume_entry *nd = realloc(r->done, ncap * sizeof *nd);
        if (!nd)
            return -1;
        r->done = nd;
        r->capdone = ncap;
    }
    struct fr_resume_entry *e = &r->done[r->ndone];
    e->line = k->line;
    e->rline = rline;
    e->duplicate = k->duplicate;
    e->id = NULL;
    if (k->id && !(e->id = strdup(k->id)))
        return -1;
    r->ndone++;
    return 0;
}

static int by_line(const void *a, const void *b)
{
    const struct fr_resume_entry *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return x->rline < y->rline ? -1 : x->rline > y->rline;
}

static const struct fr_resume_entry *find(const struct fr_resume *r, long line)
{
    size_t lo = 0, hi = r->ndone;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->done[mid].line < line)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->ndone && r->done[lo].line == line ? &r->done[lo] : NULL;
}

/* An id as it may be shown on a terminal: JSON-quoted, control
 * characters escaped, cut to a readable length. */
static void shown_id(const char *id, char *buf, size_t n)
{
    if (!id) {
        snprintf(buf, n, "null (not a job)");
        return;
    }
    char safe[160];
    fr_term_text(id, strlen(id), safe, sizeof safe);
    snprintf(buf, n, "\"%s\"", safe);
}

int fr_resume_line(const struct fr_resume *r, long line, const char *text, size_t len, const struct fr_idset *earlier,
                   const char *jobs_name, char *err, size_t errlen)
{
    const struct fr_resume_entry *e = find(r, line);
    if (!e)
        return 0;
    /* The id this line gives a result: NULL for a line that is not a job
     * (fitrun run answers it with "id": null). */
    struct fr_job job;
    const char *type = NULL;
    char perr[256];
    const char *id = NULL;
    if (text && fr_job_parse(text, len, line, &job, &type, perr, sizeof perr) == 0)
        id = job.id;
    bool same = (!id && !e->id) || (id && e->id && !strcmp(id, e->id));
    if (!same) {
        char want[200], got[200];
        shown_id(id, got, sizeof got);
        shown_id(e->id, want, sizeof want);
        fr_seterr(err, errlen,
                  "--resume: line %ld of %s has id %s, but %s:%ld is the result of id %s for that line: the jobs "
                  "file changed since these results were written, or they belong to another jobs file; resume "
                  "with the jobs file they came from, or start a fresh --out",
                  line, jobs_name, got, r->name, e->rline, want);
    } else if (e->duplicate && id && !(earlier && fr_idset_has(earlier, id))) {
        /* Its verdict came from an earlier line that has changed since:
         * skipping this line would leave the id without a result. */
        char got[200];
        shown_id(id, got, sizeof got);
        fr_seterr(err, errlen,
                  "--resume: %s:%ld is the DuplicateId result of id %s for line %ld of %s, but no earlier line has "
                  "that id now: the jobs file changed since these results were written, or they belong to another "
                  "jobs file; resume with the jobs file they came from, or start a fresh --out",
                  r->name, e->rline, got, line, jobs_name);
        same = false;
    }
    if (text)
        fr_job_clear(&job);
    return same ? 1 : -1;
}

/* Does any kept result say DuplicateId? Only then does the check need the
 * ids of every earlier line. */
static bool has_duplicates(const struct fr_resume *r)
{
    for (size_t i = 0; i < r->ndone; i++)
        if (r->done[i].duplicate)
            return true;
    return false;
}

/* Add the id that text (a job line) holds to `ids`. -1 on ENOMEM. */
static int add_id(struct fr_idset *ids, const char *text, size_t len, long line)
{
    struct fr_job job;
    const char *type = NULL;
    char perr[256];
    int rc = 0;
    if (fr_job_parse(text, len, line, &job, &type, perr, sizeof perr) == 0)
        rc = fr_idset_add(ids, job.id) < 0 ? -1 : 0;
    fr_job_clear(&job);
    return rc;
}

int fr_resume_blank(const struct fr_resume *r, long line, const char *jobs_name, char *err, size_t errlen)
{
    const struct fr_resume_entry *e = find(r, line);
    if (!e)
        return 0;
    fr_seterr(err, errlen,
              "--resume: %s:%ld is a result for line %ld of %s, which is blank: the jobs file changed since these "
              "results were written, or they belong to another jobs file",
              r->name, e->rline, line, jobs_name);
    return -1;
}

int fr_resume_end(const struct fr_resume *r, long last, const char *jobs_name, char *err, size_t errlen)
{
    const struct fr_resume_entry *tail = r->ndone ? &r->done[r->ndone - 1] : NULL;
    if (!tail || tail->line <= last)
        return 0;
    fr_seterr(err, errlen,
              "--resume: %s:%ld is a result for line %ld, but %s has %ld line%s: the jobs file changed since these "
              "results were written, or they belong to another jobs file",
              r->name, tail->rline, tail->line, jobs_name, last, last == 1 ? "" : "s");
    return -1;
}

int fr_resume_verify(const struct fr_resume *r, int fd, const struct fr_shard *shard, const char *jobs_name, char *err,
                     size_t errlen)
{
    struct stat st;
    if (!r->ndone || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return 0; /* nothing to check, or a stream: checked line by line as it arrives */
    struct input in;
    input_init(&in, fd, jobs_name);
    in.pread_pos = 0; /* read from the start without moving the pool's offset */
    in.use_pread = true;
    long last = 0;
    int rc = 0;
    /* ids of the shard's lines read so far, for DuplicateId results (a
     * shard finds duplicates among its own lines only) */
    bool duplicates = has_duplicates(r);
    struct fr_idset *earlier = duplicates ? fr_idset_new() : NULL;
    if (duplicates && !earlier) {
        fr_seterr(err, errlen, "--resume: out of memory reading %s", jobs_name);
        rc = -1;
    }
    while (rc == 0) {
        const char *text;
        size_t len;
        long line;
        enum input_next k = input_next(&in, &text, &len, &line);
        if (k == INPUT_END)
            break;
        if (k == INPUT_MORE) {
            if (input_fill(&in) < 0) {
                fr_seterr(err, errlen, "--resume: cannot read %s: %s", jobs_name, strerror(errno));
                rc = -1;
            }
            continue;
        }
        last = line;
        if (k == INPUT_LINE && line_is_blank(text, len)) {
            if (fr_resume_blank(r, line, jobs_name, err, errlen) < 0)
                rc = -1;
        } else if (fr_resume_line(r, line, k == INPUT_LINE ? text : NULL, len, earlier, jobs_name, err, errlen) < 0)
            rc = -1;
        else if (earlier && k == INPUT_LINE && fr_shard_selects(shard, line) && add_id(earlier, text, len, line) < 0) {
            fr_seterr(err, errlen, "--resume: out of memory reading %s", jobs_name);
            rc = -1;
        }
    }
    fr_idset_free(earlier);
    input_free(&in);
    if (rc == 0 && fr_resume_end(r, last, jobs_name, err, errlen) < 0)
        rc = -1;
    return rc;
}

static char *read_all(int fd, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    for (;;) {
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
        }
        ssize_t r = pread(fd, buf + n, cap - n, (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *len = n;
    return buf;
}

/* Record one result line. Returns -1 on ENOMEM only. */
static int take(struct fr_resume *r, const char *name, long lineno, const char *s, size_t n)
{
    struct fr_result_key k;
    char err[256], key[32];
    if (line_is_blank(s, n))
        return 0;
    if (fr_result_key_parse(s, n, &k, err, sizeof err) < 0) {
        fr_warn("%s:%ld: %s; ignored", name, lineno, err);
        return 0;
    }
    int rc = 0;
    if (k.line > 0) {
        snprintf(key, sizeof key, "%ld", k.line);
        rc = fr_idset_add(r->lines, key);
        if (rc == 0) {
            /* fitrun never writes one (two files concatenated): merge's rule */
            fr_warn("%s:%ld: a second result for line %ld (the first counts); ignored", name, lineno, k.line);
            free(k.id);
            return 0;
        }
        if (rc > 0 && remember(r, &k, lineno) < 0)
            rc = -1;
    }
    r->results++;
    if (rc >= 0 && k.id && !k.duplicate)
        rc = fr_idset_add(k.line > 0 ? r->ids : r->noline, k.id);
    free(k.id);
    return rc < 0 ? -1 : 0;
}

int fr_resume_scan(int fd, const char *name, struct fr_resume *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->ids = fr_idset_new();
    r->lines = fr_idset_new();
    r->noline = fr_idset_new();
    r->name = strdup(name);
    size_t len;
    char *text = r->ids && r->lines && r->noline && r->name ? read_all(fd, &len) : NULL;
    if (!text) {
        snprintf(err, errlen, "cannot read %s for --resume: %s", name, strerror(errno ? errno : ENOMEM));
        fr_resume_free(r);
        return -1;
    }
    size_t off = 0;
    long lineno = 0;
    while (off < len) {
        char *nl = memchr(text + off, '\n', len - off);
        if (!nl) {
            /* torn last line */
            fr_warn("%s:%ld: incomplete last line (%zu bytes, the writer was interrupted); removed", name, lineno + 1,
                    len - off);
            if (ftruncate(fd, (off_t)off) < 0) {
                snprintf(err, errlen, "cannot cut the incomplete last line of %s: %s", name, strerror(errno));
                free(text);
                fr_resume_free(r);
                return -1;
            }
            break;
        }
        lineno++;
        if (take(r, name, lineno, text + off, (size_t)(nl - (text + off))) < 0) {
            snprintf(err, errlen, "out of memory reading %s", name);
            free(text);
            fr_resume_free(r);
            return -1;
        }
        off = (size_t)(nl - text) + 1;
    }
    free(text);
    if (r->ndone) /* no result naming a line: r->done is NULL, which qsort must not get */
        qsort(r->done, r->ndone, sizeof *r->done, by_line);
    return 0;
}
