/* dirs.c — the one step of the environment export that touches the file
 * system: creating the private directories the export list points at
 * (JOBLIB_TEMP_FOLDER). See include/fitrun/envexport.h. */
#include "fitrun/envexport.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fitrun/common.h"

/* mkdir 0700, or accept an existing directory that is ours (fixing its
 * mode). Anything else under a shared /var/tmp — a symlink, a file,
 * someone else's directory — is refused: joblib would write our arrays
 * there. */
static int make_private_dir(const char *path, char *err, size_t errlen)
{
    if (mkdir(path, 0700) == 0)
        return 0;
    if (errno != EEXIST) {
        fr_seterr(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (lstat(path, &st) < 0) {
        fr_seterr(err, errlen, "cannot stat %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
        fr_seterr(err, errlen, "%s exists but is not a directory owned by uid %lu: refusing to use it", path,
                  (unsigned long)geteuid());
        return -1;
    }
    if ((st.st_mode & 077) && chmod(path, 0700) < 0) {
        fr_seterr(err, errlen, "cannot chmod 0700 %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int fr_env_make_dirs(struct fr_env_export *ex, char *err, size_t errlen)
{
    int rc = 0;
    for (size_t i = 0; i < ex->n; i++) {
        struct fr_env_entry *e = &ex->e[i];
        if (!e->make_dir || e->action != FR_ENV_SET)
            continue;
        char msg[FR_ENV_REASON_MAX];
        if (make_private_dir(e->value, msg, sizeof msg) < 0) {
            fr_seterr(err, errlen, "%s: %s not exported", msg, e->name);
            fr_seterr(e->reason, sizeof e->reason, "not exported: %s", msg);
            e->action = FR_ENV_SKIPPED;
            rc = -1;
        }
        e->make_dir = false;
    }
    return rc;
}
