# expect: signal SIGABRT
"""Signalling itself stays allowed: os.abort() is tgkill on its own pid."""
import os
os.abort()
