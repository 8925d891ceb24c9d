# expect: violation kill
"""Killing the parent worker: signals only go to the job's own pid."""
import os, signal
os.kill(os.getppid(), signal.SIGKILL)
print("done: killed the parent")
