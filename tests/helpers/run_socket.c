/* run_socket.c — test helper: a program whose only unusual act is one
 * socket(2) call, for the `violation` tests of `fitrun run` (the exec
 * preset does not allow sockets). Prints what happened if it survives. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

int main(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    printf("socket() = %d (%s)\n", fd, fd < 0 ? strerror(errno) : "allowed");
    return fd < 0 ? 1 : 0;
}
