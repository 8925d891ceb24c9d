# expect: violation execve
# absent: {tmp}/pwned
"""Replacing the process with a shell."""
import os
os.execv("/bin/sh", ["sh", "-c", "echo pwned > %s/pwned" % TMP])
