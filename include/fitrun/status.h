/* fitrun/status.h — the words a result uses for how a job ended: its
 * status and, for a timeout, which clock ran out. The vocabulary of the
 * results file (fitrun/jobs.h writes it, fitrun/verdict.h decides it);
 * names in launcher/verdict/status.c. */
#ifndef FITRUN_STATUS_H
#define FITRUN_STATUS_H

enum fr_status {
    FR_STATUS_OK = 0,
    FR_STATUS_ERROR,
    FR_STATUS_TIMEOUT,
    FR_STATUS_MEMORY,
    FR_STATUS_VIOLATION,
    FR_STATUS_SIGNAL,
    FR_STATUS_OUTPUT_LIMIT,
    FR_STATUS_INVALID, /* the pool refused the job line (or a runtime did) */
    FR_STATUS_CRASH,   /* fitrun's own machinery failed twice on the job */
};

enum fr_timeout_kind { FR_TIMEOUT_NONE = 0, FR_TIMEOUT_CPU, FR_TIMEOUT_WALL };

const char *fr_status_name(enum fr_status s);             /* "ok", "timeout", ...; "unknown" */
const char *fr_timeout_kind_name(enum fr_timeout_kind k); /* "cpu", "wall", NULL */

#endif
