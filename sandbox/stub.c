/* stub.c — placeholder until the sandbox library lands (delete then). */
#include <string.h>
#include "fitrun/sandbox.h"
int fr_policy_build(const struct fr_policy_spec *spec, struct fr_policy **out, char *err, size_t errlen)
{ (void)spec; (void)out; if (errlen) strncpy(err, "sandbox not built yet", errlen - 1); return -1; }
int fr_policy_build_kv(const char *kv, struct fr_policy **out, char *err, size_t errlen)
{ (void)kv; return fr_policy_build(NULL, out, err, errlen); }
void fr_policy_free(struct fr_policy *p) { (void)p; }
int fr_policy_apply(const struct fr_policy *p, int report_fd) { (void)p; (void)report_fd; return 0; }
int fr_report_read(int report_fd) { (void)report_fd; return -1; }
void fr_classify(const struct fr_classify_in *in, struct fr_outcome *out) { (void)in; memset(out, 0, sizeof *out); }
const char *fr_status_name(enum fr_status s) { (void)s; return "ok"; }
const char *fr_timeout_kind_name(enum fr_timeout_kind k) { (void)k; return NULL; }
int fr_preset_parse(const char *s, enum fr_preset *out) { (void)s; *out = FR_PRESET_NONE; return 0; }
const char *fr_preset_name(enum fr_preset p) { (void)p; return "none"; }
