# expect: violation clone
"""os.fork() is glibc's fork(), which is clone(2); the first one is fatal."""
import os
while True:
    os.fork()
