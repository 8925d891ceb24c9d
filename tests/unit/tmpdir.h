/* tmpdir.h — a fresh directory under /tmp for a test (or a group of tests),
 * removed afterwards: the fixture tree the test writes its files into.
 * Include after the system headers; a test file writes its own setup as
 * `return tmpdir_make("name");` and uses teardown() as it is. */
#ifndef FITRUN_TEST_TMPDIR_H
#define FITRUN_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

static char dir[64];

static int tmpdir_make(const char *name)
{
    snprintf(dir, sizeof dir, "/tmp/fitrun-test-%s-XXXXXX", name);
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
