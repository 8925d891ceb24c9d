# expect: signal SIGSYS
# never: done:
"""The old forgery: a well-formed violation record on the descriptor the
child shares with its supervisor, then SIGSYS raised by the prediction
itself. Whatever SIGSYS is, it is a signal: a violation is only what the
supervisor saw on the filter's listener, which the child no longer holds
(REPORT_FD is closed by then, so the write fails too)."""
import os, signal, struct
record = struct.pack("<IIiI", 0x46525632, 0xC000003E, 101, ~0x46525632 & 0xFFFFFFFF ^ 0xC000003E ^ 101)
for fd in (REPORT_FD, 3, 4, 5):
    try:
        os.write(fd, record)
    except OSError:
        pass
os.kill(os.getpid(), signal.SIGSYS)
print("done: survived")
