# expect: error
# policy: preset=python;fs=libs
# output: PermissionError
# interpreter-paths: yes
# keep: {tmp}/answers.jsonl
# cwd: {tmp}
# never: done:
"""Secrets under Landlock: /etc/shadow, and a 0600 file of the caller's
(the jobs file, the results file) — readable to the worker's uid, not to a
prediction. Every attempt must fail; the last error escapes."""
import os
hits = []
for path in ("/etc/shadow", "/etc/passwd", "/root/.bashrc", os.path.join(TMP, "answers.jsonl"), "answers.jsonl"):
    try:
        with open(path) as f:
            hits.append((path, f.read(10)))
    except FileNotFoundError:
        pass
    except PermissionError:
        pass
if hits:
    print("done: read", hits)
raise PermissionError("nothing readable")
