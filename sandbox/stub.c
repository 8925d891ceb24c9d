/* stub.c — placeholder until the sandbox library lands (delete then). */
#include "fitrun/sandbox.h"
