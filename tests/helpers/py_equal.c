/* py_equal — fitrun's scorer (fr_py_equal) on pairs from stdin, one per
 * line: EXPECTED <TAB> OUTPUT <TAB> 0|1 (Python's verdict; see
 * tests/python/eq_corpus.py). Prints every pair where fitrun disagrees
 * with Python, then "N pairs, M disagree"; exits 1 if any do, 2 on a line
 * it cannot use (an OUTPUT the strict scan refuses included). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/jsonscan.h"
#include "fitrun/verdict.h"

int main(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long n = 0, bad = 0;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        if (line[len - 1] == '\n')
            line[--len] = '\0';
        char *t1 = memchr(line, '\t', (size_t)len),
             *t2 = t1 ? memchr(t1 + 1, '\t', (size_t)(line + len - t1 - 1)) : NULL;
        if (!t2) {
            fprintf(stderr, "py_equal: line %ld: not three fields\n", n + 1);
            return 2;
        }
        /* EXPECTED as a job line holds it: the value of a member. */
        size_t exp_len = (size_t)(t1 - line);
        char *job = malloc(exp_len + 8);
        struct fr_json_member *m = NULL;
        size_t nm = 0;
        if (!job)
            return 2;
        memcpy(job, "{\"e\":", 5);
        memcpy(job + 5, line, exp_len);
        strcpy(job + 5 + exp_len, "}");
        int kind = fr_json_line(job, exp_len + 6, &m, &nm);
        const char *out = t1 + 1;
        size_t out_len = (size_t)(t2 - out);
        if (kind != FR_JSON_LINE_OBJECT || nm != 1 || !fr_json_whole(out, out_len, 200, FR_JSON_STRICT)) {
            fprintf(stderr, "py_equal: line %ld: %s: %s\n", n + 1,
                    kind == FR_JSON_LINE_OBJECT ? "output refused by the strict scan" : "expected is not JSON", line);
            return 2;
        }
        bool want = t2[1] == '1', got = fr_py_equal(m[0].value, (struct fr_json_span){out, out_len});
        free(m);
        free(job);
        if (got != want) {
            printf("python %s, fitrun %s: %.*s == %.*s\n", want ? "equal" : "unequal", got ? "equal" : "unequal",
                   (int)(t1 - line), line, (int)out_len, out);
            bad++;
        }
        n++;
    }
    free(line);
    printf("%ld pairs, %ld disagree\n", n, bad);
    return bad ? 1 : 0;
}
