# expect: violation mount
"""Mounting a tmpfs over the job's directory."""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.mount(b"none", TMP.encode(), b"tmpfs", 0, None)
print("done: mount")
