/* stub.c — placeholder until planning lands (delete then). */
#include <stdio.h>
#include <string.h>
#include "fitrun/plan.h"
void fr_plan_make(const struct fr_resources *res, const struct fr_plan_opts *opts, struct fr_plan *out)
{ (void)res; memset(out, 0, sizeof *out); out->workers = opts->workers_override > 0 ? opts->workers_override : 1; out->threads_per_worker = 1; }
const char *fr_rounding_name(enum fr_rounding r) { return r == FR_ROUND_CEIL ? "ceil" : r == FR_ROUND_NEAREST ? "nearest" : "floor"; }
int fr_rounding_parse(const char *s, enum fr_rounding *out) { (void)s; *out = FR_ROUND_FLOOR; return 0; }
const char *fr_plan_summary(const struct fr_resources *res, const struct fr_plan *plan, char *buf, size_t n)
{ (void)res; snprintf(buf, n, "plan: %d workers", plan->workers); return buf; }
