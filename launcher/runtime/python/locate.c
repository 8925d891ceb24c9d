/* locate.c — the files the Python runtime needs: fitrun_runtime.py, the
 * sandbox library, the interpreter. */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Directory of the running binary, e.g. "/usr/bin" or the build tree. */
static int exe_dir(const char *self_exe, char *buf, size_t n)
{
    char tmp[PATH_MAX];
    if (self_exe && *self_exe)
        snprintf(tmp, sizeof tmp, "%s", self_exe);
    else {
        ssize_t len = readlink("/proc/self/exe", tmp, sizeof tmp - 1);
        if (len < 0)
            return -1;
        tmp[len] = '\0';
    }
    char *slash = strrchr(tmp, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    snprintf(buf, n, "%s", *tmp ? tmp : "/");
    return 0;
}

/* fitrun_runtime.py: $FITRUN_PYTHON_DIR, else <bindir>/share/fitrun/python
 * (build tree: the binary sits at the top of it), else
 * <bindir>/../share/fitrun/python (installed). */
int py_find_script(const char *self_exe, char *out, size_t n, char *err, size_t errlen)
{
    const char *env = getenv("FITRUN_PYTHON_DIR");
    if (env && *env) {
        int w = snprintf(out, n, "%s/%s", env, PY_SCRIPT);
        if (w > 0 && (size_t)w < n && is_file(out))
            return 0;
        snprintf(err, errlen, "FITRUN_PYTHON_DIR=%s: no %s there", env, PY_SCRIPT);
        return -1;
    }
    char dir[PATH_MAX];
    if (exe_dir(self_exe, dir, sizeof dir) < 0) {
        snprintf(err, errlen, "cannot locate the fitrun binary: %s", strerror(errno));
        return -1;
    }
    static const char *const rel[] = {"share/fitrun/python", "../share/fitrun/python"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        int w = snprintf(out, n, "%s/%s/%s", dir, rel[i], PY_SCRIPT);
        if (w > 0 && (size_t)w < n && is_file(out))
            return 0;
    }
    snprintf(err, errlen,
             "cannot find %s in %s/share/fitrun/python or %s/../share/fitrun/python "
             "(set FITRUN_PYTHON_DIR)",
             PY_SCRIPT, dir, dir);
    return -1;
}

/* libfitrun_sandbox.so: $FITRUN_SANDBOX_LIB, else <bindir>/lib (build tree),
 * else <prefix>/lib[/<multiarch>]/fitrun (CMake's install, whose LIBDIR
 * is lib/<multiarch> on Debian with prefix /usr and lib elsewhere). */
int py_find_lib(const char *self_exe, char *out, size_t n, char *err, size_t errlen)
{
    const char *env = getenv("FITRUN_SANDBOX_LIB");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        if (is_file(out))
            return 0;
        snprintf(err, errlen, "FITRUN_SANDBOX_LIB=%s: no such file", env);
        return -1;
    }
    char dir[PATH_MAX];
    if (exe_dir(self_exe, dir, sizeof dir) < 0) {
        snprintf(err, errlen, "cannot locate the fitrun binary: %s", strerror(errno));
        return -1;
    }
    int w = snprintf(out, n, "%s/lib/libfitrun_sandbox.so", dir);
    if (w > 0 && (size_t)w < n && is_file(out))
        return 0;
    static const char *const pats[] = {"/../lib/fitrun/libfitrun_sandbox.so", "/../lib*/*/fitrun/libfitrun_sandbox.so",
                                       "/../lib64/fitrun/libfitrun_sandbox.so"};
    for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++) {
        char pat[PATH_MAX + 64];
        snprintf(pat, sizeof pat, "%s%s", dir, pats[i]);
        glob_t g;
        if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
            snprintf(out, n, "%s", g.gl_pathv[0]);
            globfree(&g);
            return 0;
        }
        globfree(&g);
    }
    snprintf(err, errlen,
             "cannot find libfitrun_sandbox.so in %s/lib or %s/../lib/.../fitrun "
             "(set FITRUN_SANDBOX_LIB)",
             dir, dir);
    return -1;
}

static const char *path_of(char *const *envp)
{
    for (size_t i = 0; envp && envp[i]; i++)
        if (!strncmp(envp[i], "PATH=", 5))
            return envp[i] + 5;
    return NULL;
}

static bool is_executable_file(const char *path)
{
    return is_file(path) && access(path, X_OK) == 0;
}

int py_find_interpreter(const char *interpreter, char *const *envp, char *out, size_t n, char *err, size_t errlen)
{
    if (strchr(interpreter, '/')) {
        if (access(interpreter, X_OK) < 0) {
            snprintf(err, errlen, "python interpreter %s: %s", interpreter, strerror(errno));
            return -1;
        }
        snprintf(out, n, "%s", interpreter);
        return 0;
    }
    /* A command name: PATH of the interpreter's own environment, as execvp
     * would search it (an empty entry is the current directory). */
    const char *path = path_of(envp);
    if (!path)
        path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        int w = snprintf(out, n, "%.*s%s%s", (int)len, p, len ? "/" : "", interpreter);
        if (w > 0 && (size_t)w < n && is_executable_file(out))
            return 0;
        if (!colon)
            break;
        p = colon + 1;
    }
    snprintf(err, errlen, "python interpreter %s: not found in PATH (%s)", interpreter, path);
    return -1;
}
