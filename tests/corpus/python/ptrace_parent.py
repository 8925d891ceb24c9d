# expect: violation ptrace
"""Attaching to the parent (the worker) with ptrace."""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace(16, os.getppid(), None, None)  # PTRACE_ATTACH
print("done: ptrace")
