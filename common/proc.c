/* proc.c — what the process asks the kernel about itself: where its
 * binary is and the monotonic clock (see fitrun/common.h). */
#include <errno.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "fitrun/common.h"

int fr_self_exe(char *buf, size_t n)
{
    if (n < 2) {
        errno = ENAMETOOLONG;
        return -1;
    }
    ssize_t l = readlink("/proc/self/exe", buf, n);
    if (l < 0) {
        buf[0] = '\0';
        return -1;
    }
    if ((size_t)l >= n) {
        buf[0] = '\0';
        errno = ENAMETOOLONG;
        return -1;
    }
    buf[l] = '\0';
    return 0;
}

uint64_t fr_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t fr_timeval_us(const struct timeval *tv)
{
    return (uint64_t)tv->tv_sec * 1000000u + (uint64_t)tv->tv_usec;
}
