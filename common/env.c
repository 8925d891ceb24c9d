/* env.c — a variable of an environment given as an envp array of
 * "NAME=value" strings (see fitrun/common.h). */
#include <string.h>

#include "fitrun/common.h"

const char *fr_env_lookup(char *const *envp, const char *name)
{
    if (!envp || !name)
        return NULL;
    size_t l = strlen(name);
    for (char *const *p = envp; *p; p++)
        if (!strncmp(*p, name, l) && (*p)[l] == '=')
            return *p + l + 1;
    return NULL;
}
