/* stub.c — placeholder until profiles land (delete then). */
#include <string.h>
#include "fitrun/profile.h"
void fr_profile_defaults(struct fr_profile *p) { memset(p, 0, sizeof *p); }
int fr_profile_load(struct fr_profile *p, const char *path, char *err, size_t errlen)
{ (void)p; (void)path; (void)err; (void)errlen; return -1; }
void fr_profile_free(struct fr_profile *p) { (void)p; }
