/* wrap_ignoreterm — leave a SIGTERM-ignoring process behind in our group.
 *
 *   wrap_ignoreterm PIDFILE EXIT_CODE
 *
 * Forks a child that ignores SIGTERM (and SIGINT, SIGHUP), writes its pid
 * to PIDFILE (atomically, via rename) and sleeps forever; only SIGKILL ends
 * it. The parent waits until PIDFILE exists and exits with EXIT_CODE, so
 * the wrapper sees its main child exit while the process group lives on.
 * Used by tests/cli/wrap_grace.bats. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: wrap_ignoreterm PIDFILE EXIT_CODE\n");
        return 2;
    }
    const char *pidfile = argv[1];
    int code = atoi(argv[2]);
    pid_t pid = fork();
    if (pid < 0) {
        perror("wrap_ignoreterm: fork");
        return 2;
    }
    if (pid == 0) {
        signal(SIGTERM, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", pidfile);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0 || rename(tmp, pidfile) < 0) {
            perror("wrap_ignoreterm: pidfile");
            _exit(2);
        }
        for (;;)
            pause();
    }
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 10000 && access(pidfile, F_OK) < 0; i++)
        nanosleep(&ms, NULL);
    return code;
}
