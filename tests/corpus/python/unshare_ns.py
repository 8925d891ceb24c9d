# expect: violation unshare
"""New user + mount namespaces (the first step of most container escapes)."""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.unshare(0x10000000 | 0x00020000)  # CLONE_NEWUSER | CLONE_NEWNS
print("done: unshare")
