# expect: violation chmod
# keep: {tmp}/victim
"""Changing a file's mode (the victim must still be 0600 afterwards)."""
import os
os.chmod(TMP + "/victim", 0o777)
