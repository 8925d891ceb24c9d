# expect: ok
# policy: preset=python;cpu_time=10s;memory=2G
# stdout: det=1.0000 solve=ok svd=ok
"""Allowed: numpy matrix work (OPENBLAS_NUM_THREADS=1, single-threaded)."""
import numpy as np
rng = np.random.default_rng(7)
a = rng.standard_normal((200, 200))
q, _ = np.linalg.qr(a)
b = a @ a.T + 200 * np.eye(200)
x = np.linalg.solve(b, np.ones(200))
s = np.linalg.svd(a, compute_uv=False)
grid = np.arange(900).reshape(30, 30)
assert (np.rot90(grid, 2) == grid[::-1, ::-1]).all()
print("det=%.4f solve=%s svd=%s" % (abs(np.linalg.det(q)), "ok" if np.allclose(b @ x, 1) else "bad",
                                    "ok" if s[0] >= s[-1] > 0 else "bad"))
