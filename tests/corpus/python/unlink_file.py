# expect: violation unlink
# keep: {tmp}/victim
"""Deleting a file."""
import os
os.unlink(TMP + "/victim")
