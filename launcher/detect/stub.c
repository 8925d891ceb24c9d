/* stub.c — placeholder until detection lands (delete then). */
#include <stdarg.h>
#include <string.h>
#include "fitrun/detect.h"
int fr_detect(const struct fr_detect_opts *opts, struct fr_resources *out)
{ (void)opts; memset(out, 0, sizeof *out); out->cpu_online = out->cpu_affinity = 1; out->cpu_effective = 1; return 0; }
void fr_detect_note(struct fr_resources *r, const char *fmt, ...) { (void)r; (void)fmt; }
int fr_cpulist_parse(const char *s, uint64_t *mask, int nbits) { (void)s; (void)mask; (void)nbits; return -1; }
