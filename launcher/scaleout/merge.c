/* merge.c — `fitrun merge`: put the per-shard result files back together
 * and prove nothing was lost. See include/fitrun/scaleout.h.
 *
 * Two passes, so that memory stays O(input lines) however large the
 * results are (a result carries up to two captured outputs):
 *   1. read the jobs file and classify every physical line the way
 *      `fitrun run` does (fr_job_parse): a job (first line of its id), a
 *      repeat of an earlier id, an invalid line, or blank;
 *   2. read each result file line by line (fr_result_key_parse). A result
 *      names its input line ("line") and id; the first complete result of
 *      each line wins and only its (file, offset, length) is kept;
 * then jobs without a result are reported by shard, and the winners are
 * copied, byte for byte as `fitrun run` wrote them, in input-line order.
 * The output is what one `fitrun run` over the whole file would have
 * written (in input order): a result per job, and the `invalid` results
 * of invalid lines where the shards wrote them. Completeness counts jobs.
 *
 * A "complete result" is one line that parses as a JSON object with a
 * string "status"; anything else (a line torn by a killed task, garbage)
 * is reported with file:line and skipped, so `--resume` of that shard
 * produces it again. */
#include "fitrun/scaleout.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fitrun/jobs.h"
#include "fitrun/common.h"

enum slot_kind {
    SLOT_BLANK = 0, /* nothing: no result expected or accepted */
    SLOT_JOB,       /* first line of a valid id: must get exactly one result */
    SLOT_REPEAT,    /* a later line with the same id: `fitrun run` answers it `invalid` (DuplicateId) */
    SLOT_INVALID,   /* not a job: answered `invalid`; kept when present, never missing */
};

/* One physical line of the jobs file, and the result chosen for it. */
struct slot {
    char *id;   /* SLOT_JOB / SLOT_REPEAT: the id as JSON text ("\"a1\""), for messages */
    char *raw;  /* SLOT_REPEAT: the id itself, for the DuplicateId result */
    long first; /* SLOT_REPEAT: the line that holds the id's job */
    unsigned char kind;
    int file;   /* winning result: file index, -1 = none yet */
    long rline; /* its line number in that file */
    off_t off;  /* its bytes in that file, newline excluded */
    size_t len;
};

struct rfile {
    const char *path;
    FILE *f;        /* NULL: could not be opened (its jobs count as missing) */
    int name_shard; /* K of "<name>.K.jsonl", -1 when the name has none */
    long dups, bad, foreign, misplaced;
};

struct merge {
    const struct fr_merge_opts *o;
    const char *jobs_name;
    struct slot *slots; /* slots[L-1] for input line L */
    long nlines, cap;
    long njobs;
    json_t *index; /* id -> line of its job (SLOT_JOB) */
    struct rfile *files;
    int nfiles;
    long noline;       /* results without "line", placed by id */
    long written_dups; /* DuplicateId results merge wrote itself (repeats another shard ran) */
    /* Shard-count inference (no --shards): the gcd of L-1-K over results of
     * line L found in a file named K, and whether every file is so named. */
    long gcd;
    bool names_ok, names_fit;
    int max_name_shard;
};

/* Same notion of blank as `fitrun run`: such lines are skipped. */
static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

static long gcd_l(long a, long b)
{
    while (b) {
        long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* "\"a1\"" for messages: ids may hold anything. Caller frees. */
static char *quoted(const char *id)
{
    json_t *s = json_string(id);
    char *q = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    json_decref(s);
    return q ? q : strdup("?");
}

/* Pass 1: the jobs file ----------------------------------------------------- */

static struct slot *new_slot(struct merge *m)
{
    if (m->nlines == m->cap) {
        long ncap = m->cap ? m->cap * 2 : 1024;
        struct slot *ns = realloc(m->slots, (size_t)ncap * sizeof *ns);
        if (!ns)
            return NULL;
        m->slots = ns;
        m->cap = ncap;
    }
    struct slot *s = &m->slots[m->nlines++];
    *s = (struct slot){.kind = SLOT_BLANK, .file = -1};
    return s;
}

/* fr_job_parse() messages start "line N: "; ours say "file:N: ". */
static const char *skip_line_prefix(const char *msg)
{
    const char *p = !strncmp(msg, "line ", 5) ? strstr(msg, ": ") : NULL;
    return p ? p + 2 : msg;
}

static int classify(struct merge *m, struct slot *s, const char *buf, size_t len, long line)
{
    struct fr_job job;
    const char *type = NULL;
    char err[512];
    if (blank(buf, len))
        return 0;
    if (len > FR_JOB_MAX_LINE) {
        s->kind = SLOT_INVALID;
        fr_info("merge: %s:%ld: longer than %u bytes, not a job; no result expected", m->jobs_name, line,
                FR_JOB_MAX_LINE);
        return 0;
    }
    if (fr_job_parse(buf, len, line, &job, &type, err, sizeof err) < 0) {
        s->kind = SLOT_INVALID;
        fr_info("merge: %s:%ld: not a job (%s); no result expected", m->jobs_name, line, skip_line_prefix(err));
        fr_job_clear(&job);
        return 0;
    }
    json_t *first = json_object_get(m->index, job.id);
    s->id = quoted(job.id);
    if (first) {
        s->kind = SLOT_REPEAT;
        s->first = (long)json_integer_value(first);
        if (!(s->raw = strdup(job.id))) {
            fr_job_clear(&job);
            return -1;
        }
        fr_warn("merge: %s:%ld: id %s repeats line %ld; only line %ld needs a result (this one is DuplicateId)",
                m->jobs_name, line, s->id, s->first, s->first);
    } else {
        s->kind = SLOT_JOB;
        m->njobs++;
        if (json_object_set_new(m->index, job.id, json_integer(line)) < 0) {
            fr_job_clear(&job);
            return -1;
        }
    }
    fr_job_clear(&job);
    return s->id ? 0 : -1;
}

static int read_jobs(struct merge *m)
{
    bool is_stdin = !strcmp(m->o->jobs, "-");
    FILE *f = is_stdin ? stdin : fopen(m->o->jobs, "re");
    if (!f) {
        fr_warn("merge: cannot open jobs file %s: %s", m->o->jobs, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    errno = 0;
    while (rc == 0 && (n = getline(&buf, &cap, f)) >= 0) {
        size_t len = (size_t)n;
        if (len && buf[len - 1] == '\n')
            len--;
        struct slot *s = new_slot(m);
        rc = s ? classify(m, s, buf, len, m->nlines) : -1;
        if (rc < 0)
            fr_warn("merge: %s:%ld: out of memory", m->jobs_name, m->nlines);
        errno = 0;
    }
    if (rc == 0 && ferror(f)) {
        fr_warn("merge: reading jobs file %s: %s", m->jobs_name, strerror(errno ? errno : EIO));
        rc = -1;
    }
    free(buf);
    if (!is_stdin)
        fclose(f);
    return rc;
}

/* Pass 2: the result files ------------------------------------------------------ */

/* A result for input line L sits in file K: with --shards, report a file
 * holding another shard's lines (wrong N, or files mixed up); without,
 * feed the inference of N. */
static void note_shard(struct merge *m, struct rfile *rf, long line, long rline)
{
    int k = rf->name_shard;
    if (k < 0)
        return;
    if (m->o->shards > 0) {
        int want = fr_shard_of_line(line, m->o->shards);
        if (want != k && rf->misplaced++ == 0)
            fr_warn("merge: %s:%ld: the result for line %ld belongs to shard %d of %d, not shard %d as the file "
                    "name says; check --shards",
                    rf->path, rline, line, want, m->o->shards, k);
        return;
    }
    if (line - 1 < k)
        m->names_fit = false;
    else
        m->gcd = gcd_l(m->gcd, line - 1 - k);
}

/* Which line does this result answer? 0 = none (reported, dropped). */
static long result_line(struct merge *m, struct rfile *rf, const struct fr_result_key *k, long rline)
{
    const struct slot *s = k->line > 0 && k->line <= m->nlines ? &m->slots[k->line - 1] : NULL;
    char *q = k->id ? quoted(k->id) : NULL;
    long line = 0;
    if (k->line > 0) {
        /* By line, checked against the id on that line: a result written
         * for another jobs file must not fill this one's gaps. */
        bool same_id = s && s->id && q && !strcmp(s->id, q);
        /* `fitrun run` answers an invalid line with "id": null. */
        if (s && ((s->kind == SLOT_INVALID && !k->id) || (s->kind == SLOT_JOB && same_id) ||
                  (s->kind == SLOT_REPEAT && same_id && k->duplicate)))
            line = k->line;
        else if (s && s->kind == SLOT_REPEAT && same_id)
            fr_warn("merge: %s:%ld: a second run of id %s (line %ld repeats line %ld: another shard ran it); "
                    "dropped, an id counts once: line %ld gets the DuplicateId result a single run writes",
                    rf->path, rline, q, k->line, s->first, k->line);
        else
            fr_warn("merge: %s:%ld: result for line %ld (id %s), but line %ld of %s is %s; dropped (results of "
                    "another jobs file?)",
                    rf->path, rline, k->line, q ? q : "null", k->line, m->jobs_name,
                    !s || s->kind == SLOT_BLANK ? "no job"
                    : s->kind == SLOT_INVALID   ? "not a job"
                                                : s->id);
        if (!line)
            rf->foreign++;
    } else if (!k->id || k->duplicate) {
        rf->bad++;
        fr_warn("merge: %s:%ld: a result with neither \"line\" nor a job's \"id\"; skipped", rf->path, rline);
    } else {
        /* No "line" (not written by `fitrun run`): by id. */
        json_t *l = json_object_get(m->index, k->id);
        if (l) {
            line = (long)json_integer_value(l);
            m->noline++;
        } else {
            rf->foreign++;
            fr_warn("merge: %s:%ld: id %s is not a job of %s; dropped", rf->path, rline, q, m->jobs_name);
        }
    }
    free(q);
    return line;
}

static void read_result_line(struct merge *m, int fi, const char *buf, size_t len, long rline, off_t off,
                             bool last_no_newline)
{
    struct rfile *rf = &m->files[fi];
    struct fr_result_key k;
    char err[512];
    if (blank(buf, len))
        return;
    if (fr_result_key_parse(buf, len, &k, err, sizeof err) < 0) {
        rf->bad++;
        /* getline() stops only at a newline or at the end: a line without
         * one is the last, and if it does not parse, it was cut short. */
        if (last_no_newline)
            fr_warn("merge: %s:%ld: torn last line (%zu bytes, no newline: the task was cut off?); skipped, "
                    "--resume of its shard reruns that job",
                    rf->path, rline, len);
        else
            fr_warn("merge: %s:%ld: %s; skipped", rf->path, rline, err);
        return;
    }
    long line = result_line(m, rf, &k, rline);
    free(k.id);
    if (!line)
        return;
    struct slot *s = &m->slots[line - 1];
    if (s->file >= 0) {
        rf->dups++;
        fr_warn("merge: %s:%ld: another result for line %ld%s%s (first at %s:%ld); dropped", rf->path, rline, line,
                s->id ? ", id " : "", s->id ? s->id : "", m->files[s->file].path, s->rline);
    } else {
        s->file = fi;
        s->rline = rline;
        s->off = off;
        s->len = len;
    }
    if (k.line > 0)
        note_shard(m, rf, line, rline);
}

static void read_results(struct merge *m, int fi)
{
    struct rfile *rf = &m->files[fi];
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    long rline = 0;
    off_t off = 0;
    errno = 0;
    while ((n = getline(&buf, &cap, rf->f)) >= 0) {
        size_t len = (size_t)n;
        bool nl = len && buf[len - 1] == '\n';
        if (nl)
            len--;
        read_result_line(m, fi, buf, len, ++rline, off, !nl);
        off += n;
        errno = 0;
    }
    if (ferror(rf->f))
        fr_warn("merge: reading %s (after line %ld): %s; the rest of it is ignored", rf->path, rline,
                strerror(errno ? errno : EIO));
    free(buf);
}

/* Result files stay open for the output pass; a thousand-shard merge needs
 * more descriptors than the usual soft limit of 1024. */
static void raise_fd_limit(int nfiles)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)nfiles + 16)
        return;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        fr_warn("merge: raising the open-file limit for %d result files: %s", nfiles, strerror(errno));
}

static void read_all_results(struct merge *m)
{
    raise_fd_limit(m->nfiles);
    for (int i = 0; i < m->nfiles; i++) {
        struct rfile *rf = &m->files[i];
        rf->path = m->o->results[i];
        rf->name_shard = fr_shard_from_filename(rf->path);
        if (rf->name_shard < 0)
            m->names_ok = false;
        else if (rf->name_shard > m->max_name_shard)
            m->max_name_shard = rf->name_shard;
        rf->f = fopen(rf->path, "re");
        if (!rf->f) {
            fr_warn("merge: cannot open %s: %s; its jobs count as missing", rf->path, strerror(errno));
            continue;
        }
        read_results(m, i);
    }
}

/* Shard count ------------------------------------------------------------- */

/* N from --shards, or inferred: every file named <name>.K.jsonl, and every
 * line L answered in file K satisfies (L-1) mod N == K, i.e. N divides each
 * L-1-K (so their gcd g) and N > max K. The smallest such N is taken; when g
 * has other divisors above max K the data cannot tell them apart (one
 * result per file, or the last shards all absent), *ambiguous says so.
 * Returns N, or 0 when unknown. */
static int shard_count(const struct merge *m, bool *ambiguous)
{
    *ambiguous = false;
    if (m->o->shards > 0)
        return m->o->shards;
    if (!m->names_ok || !m->names_fit || m->nfiles == 0)
        return 0;
    long lo = (long)m->max_name_shard + 1;
    if (m->gcd == 0) { /* every result is on line K+1 of its shard: any N > max K fits */
        *ambiguous = true;
        return (int)lo;
    }
    for (long d = lo; d <= m->gcd; d++)
        if (m->gcd % d == 0) {
            *ambiguous = d != m->gcd;
            return d <= INT_MAX ? (int)d : 0;
        }
    return 0;
}

/* Report --------------------------------------------------------------------- */

/* "1,4,7" of the shards with missing jobs, for `sbatch --array=`. */
static void shard_list(const size_t *per, size_t nsh, char *list, size_t n)
{
    size_t used = 0;
    list[0] = '\0';
    for (size_t k = 0; k < nsh; k++) {
        if (!per[k])
            continue;
        int w = snprintf(list + used, n - used, "%s%zu", used ? "," : "", k);
        if (w < 0 || (size_t)w >= n - used) {
            snprintf(list + used, n - used, ",...");
            return;
        }
        used += (size_t)w;
    }
}

static long report_missing(const struct merge *m)
{
    long missing = 0;
    for (long l = 0; l < m->nlines; l++)
        missing += m->slots[l].kind == SLOT_JOB && m->slots[l].file < 0;
    if (!missing)
        return 0;
    bool ambiguous;
    int n = shard_count(m, &ambiguous);
    if (m->o->shards <= 0 && n > 0)
        fr_warn("merge: %d shards, inferred from the file names and the job lines in them%s", n,
                ambiguous ? " (other counts fit the data too: pass --shards N)" : "");
    else if (n == 0)
        fr_warn("merge: the shard count is unknown (%s); pass --shards N to see the shard of each missing job",
                !m->names_ok ? "result files are not all named <name>.K.jsonl"
                             : "the results do not fit their file names' shard numbers");
    /* Per-shard counts for the rerun hint; shards past the last line are empty. */
    size_t nsh = n > 0 ? (size_t)(n < m->nlines ? n : m->nlines) : 0;
    size_t *per = nsh ? calloc(nsh, sizeof *per) : NULL;
    for (long l = 0; l < m->nlines; l++) {
        const struct slot *s = &m->slots[l];
        if (s->kind != SLOT_JOB || s->file >= 0)
            continue;
        if (n > 0) {
            int k = fr_shard_of_line(l + 1, n);
            fr_warn("merge: missing id %s (%s:%ld, shard %d of %d)", s->id, m->jobs_name, l + 1, k, n);
            if (per)
                per[k]++;
        } else {
            fr_warn("merge: missing id %s (%s:%ld)", s->id, m->jobs_name, l + 1);
        }
    }
    char list[1024] = "";
    if (per)
        shard_list(per, nsh, list, sizeof list);
    free(per);
    if (list[0])
        fr_warn("merge: %ld of %ld jobs have no result; rerun shard(s) %s with --resume (SLURM: sbatch --array=%s "
                "SCRIPT)",
                missing, m->njobs, list, list);
    else
        fr_warn("merge: %ld of %ld jobs have no result", missing, m->njobs);
    return missing;
}

static void report_summary(const struct merge *m, long missing)
{
    long dups = 0, bad = 0, foreign = 0, misplaced = 0, extra = 0;
    for (int i = 0; i < m->nfiles; i++) {
        dups += m->files[i].dups;
        bad += m->files[i].bad;
        foreign += m->files[i].foreign;
        misplaced += m->files[i].misplaced;
    }
    for (long l = 0; l < m->nlines; l++)
        extra += m->slots[l].kind != SLOT_JOB && m->slots[l].file >= 0;
    bool ambiguous = false;
    int inferred = m->o->shards > 0 ? 0 : shard_count(m, &ambiguous);
    /* Only what happened: "...; 2 duplicate results dropped; 1 bad line skipped". */
    const struct {
        long n;
        const char *one, *many;
    } items[] = {
        {extra, "result for an invalid input line kept", "results for invalid input lines kept"},
        {m->noline, "result without \"line\" placed by its id", "results without \"line\" placed by their id"},
        {dups, "duplicate result dropped", "duplicate results dropped"},
        {bad, "bad line skipped", "bad lines skipped"},
        {foreign, "result for no job of this file dropped", "results for no job of this file dropped"},
        {misplaced, "result in another shard's file", "results in another shard's file"},
        {m->written_dups, "DuplicateId result written for a repeated id another shard ran (as one run writes it)",
         "DuplicateId results written for repeated ids other shards ran (as one run writes them)"},
    };
    char more[512] = "";
    size_t u = 0;
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        if (!items[i].n)
            continue;
        const char *what = items[i].n == 1 ? items[i].one : items[i].many;
        int w = snprintf(more + u, sizeof more - u, "; %ld %s", items[i].n, what);
        if (w > 0 && (size_t)w < sizeof more - u)
            u += (size_t)w;
    }
    char shards[160] = "";
    if (inferred > 0)
        snprintf(shards, sizeof shards, " (%d shard%s, inferred from the file names%s)", inferred,
                 inferred == 1 ? "" : "s", ambiguous ? "; other counts fit too: pass --shards N" : "");
    fr_info("merge: %s: %ld of %ld jobs have a result, from %d file%s%s%s", missing ? "INCOMPLETE" : "complete",
            m->njobs - missing, m->njobs, m->nfiles, m->nfiles == 1 ? "" : "s", shards, more);
}

/* Output ------------------------------------------------------------------------ */

/* The DuplicateId result `fitrun run` writes for line l+1 (a repeat of an
 * earlier id), for a repeat whose shard could not know the id was taken. */
static int write_duplicate(const struct slot *s, long line, FILE *out)
{
    char msg[FR_DUPLICATE_MSG_MAX];
    fr_duplicate_message(msg, line, s->raw);
    struct fr_result r = {.id = s->raw,
                          .status = FR_STATUS_INVALID,
                          .error_type = "DuplicateId",
                          .error_message = msg,
                          .worker = -1,
                          .line = line};
    size_t len;
    char *text = fr_result_line(&r, &len);
    int rc = text && fwrite(text, 1, len, out) == len ? 0 : -1;
    if (rc < 0)
        fr_warn("merge: writing the merged results: %s", text ? strerror(errno) : "out of memory");
    free(text);
    return rc;
}

static int write_merged(struct merge *m, FILE *out)
{
    char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (long l = 0; l < m->nlines && rc == 0; l++) {
        const struct slot *s = &m->slots[l];
        if (s->file < 0 && s->kind == SLOT_REPEAT) {
            rc = write_duplicate(s, l + 1, out);
            m->written_dups++;
            continue;
        }
        if (s->file < 0)
            continue;
        const struct rfile *rf = &m->files[s->file];
        if (s->len + 1 > cap) {
            char *nb = realloc(buf, s->len + 1);
            if (!nb) {
                fr_warn("merge: out of memory for a %zu-byte result", s->len);
                rc = -1;
                break;
            }
            buf = nb;
            cap = s->len + 1;
        }
        ssize_t got = pread(fileno(rf->f), buf, s->len, s->off);
        if (got != (ssize_t)s->len) {
            fr_warn("merge: re-reading %s:%ld: %s", rf->path, s->rline,
                    got < 0 ? strerror(errno) : "the file changed while merging");
            rc = -1;
            break;
        }
        buf[s->len] = '\n';
        if (fwrite(buf, 1, s->len + 1, out) != s->len + 1) {
            fr_warn("merge: writing the merged results: %s", strerror(errno));
            rc = -1;
        }
    }
    free(buf);
    if (rc == 0 && fflush(out) != 0) {
        fr_warn("merge: writing the merged results: %s", strerror(errno));
        rc = -1;
    }
    return rc;
}

static void merge_free(struct merge *m)
{
    for (long l = 0; l < m->nlines; l++) {
        free(m->slots[l].id);
        free(m->slots[l].raw);
    }
    free(m->slots);
    for (int i = 0; i < m->nfiles; i++)
        if (m->files[i].f)
            fclose(m->files[i].f);
    free(m->files);
    json_decref(m->index);
}

int fr_merge(const struct fr_merge_opts *o, FILE *out)
{
    struct merge m = {
        .o = o,
        .jobs_name = strcmp(o->jobs, "-") ? o->jobs : "<stdin>",
        .index = json_object(),
        .files = calloc(o->nresults > 0 ? (size_t)o->nresults : 1, sizeof(struct rfile)),
        .nfiles = o->nresults > 0 ? o->nresults : 0,
        .names_ok = true,
        .names_fit = true,
        .max_name_shard = -1,
    };
    int status = FR_EXIT_USAGE;
    if (!m.index || !m.files) {
        fr_warn("merge: out of memory");
        goto done;
    }
    if (read_jobs(&m) < 0)
        goto done;
    read_all_results(&m);
    long missing = report_missing(&m);
    if (write_merged(&m, out) < 0)
        goto done;
    report_summary(&m, missing);
    status = missing ? 1 : 0;
done:
    merge_free(&m);
    return status;
}
