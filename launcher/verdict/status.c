/* status.c — the names of statuses and timeout kinds, as the results file
 * spells them (fitrun/status.h). */
#include "fitrun/status.h"

#include <stddef.h>

static const char *const g_status_names[] = {
    [FR_STATUS_OK] = "ok",
    [FR_STATUS_ERROR] = "error",
    [FR_STATUS_TIMEOUT] = "timeout",
    [FR_STATUS_MEMORY] = "memory",
    [FR_STATUS_VIOLATION] = "violation",
    [FR_STATUS_SIGNAL] = "signal",
    [FR_STATUS_OUTPUT_LIMIT] = "output_limit",
    [FR_STATUS_INVALID] = "invalid",
    [FR_STATUS_CRASH] = "crash",
};

const char *fr_status_name(enum fr_status s)
{
    if ((unsigned)s < sizeof g_status_names / sizeof g_status_names[0] && g_status_names[s])
        return g_status_names[s];
    return "unknown";
}

const char *fr_timeout_kind_name(enum fr_timeout_kind k)
{
    switch (k) {
    case FR_TIMEOUT_CPU: return "cpu";
    case FR_TIMEOUT_WALL: return "wall";
    case FR_TIMEOUT_NONE: break;
    }
    return NULL;
}
