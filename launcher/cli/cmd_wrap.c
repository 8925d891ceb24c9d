/* cmd_wrap.c — placeholder until its module lands. */
#include "fitrun/cli.h"
#include "fitrun/util.h"

int fr_cmd_wrap(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fr_warn("'wrap' is not implemented yet");
    return FR_EXIT_USAGE;
}
