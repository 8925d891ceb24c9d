/* internal.h — shared by the .c files of launcher/init only (not a contract). */
#ifndef FITRUN_INIT_INTERNAL_H
#define FITRUN_INIT_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>

/* What the reaper knows about the main child. */
struct fr_main_child {
    pid_t pid;   /* also its process group id */
    bool done;   /* reaped */
    int wstatus; /* valid when done */
};

/* reaper.c */
int fr_subreaper_enable(void);
/* Reap every zombie child; record the main child's status when it is among
 * them. Returns how many were reaped. */
int fr_reap_all(struct fr_main_child *m);
/* Does the process group still have members fitrun could signal? */
bool fr_group_alive(pid_t pgid);

#endif
