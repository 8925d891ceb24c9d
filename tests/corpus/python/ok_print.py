# expect: ok
# stdout: line 999 of 1000
# stdout: [[1, 2], [3, 4]]
"""Allowed: printing to stdout (a pipe to the parent), lots of it."""
import json, sys
for i in range(1000):
    print("line %d of 1000" % i)
print(json.dumps([[1, 2], [3, 4]]))
sys.stdout.flush()
