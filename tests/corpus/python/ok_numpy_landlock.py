# expect: ok
# policy: preset=python;fs=libs;cpu_time=10s;memory=2G
# interpreter-paths: yes
# stdout: 1.0 32768.0
"""numpy under the full python policy: Landlock with the interpreter's own
tree as read paths (fr_policy_build_paths), a matrix product, a lazily
imported stdlib module, an exception."""
import numpy as np
a = np.ones((32, 32)) @ np.ones((32, 32))
import decimal, json  # noqa: E401
try:
    json.loads("{")
except ValueError:
    pass
print(np.linalg.det(np.eye(4)), float(a.sum()))
