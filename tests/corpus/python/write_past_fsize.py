# expect: error
# policy: preset=python;fsize=64K
# stdout-file: {tmp}/out
# size: {tmp}/out 65536
# output: File too large
"""Writing past RLIMIT_FSIZE to a regular-file stdout. CPython ignores
SIGXFSZ, so the write fails with EFBIG and the job ends in an error (the C
corpus shows the SIGXFSZ case); the file stops at the limit."""
import os
block = b"x" * 4096
for _ in range(256):
    os.write(1, block)
