# expect: error
# policy: preset=python;fs=libs
# output: PermissionError
# interpreter-paths: yes
# never: done:
"""The answer-key route: walk /proc from the parent to the launcher, read
its command line (the --jobs path) and its environment. /proc is not in
the readable set: the first step fails."""
import os
with open("/proc/%d/cmdline" % os.getppid(), "rb") as f:
    print("done: cmdline", f.read())
