# expect: timeout cpu
# policy: preset=python;cpu_time=1s
# wall: 30
"""A CPU spin inside C code (catastrophic regex backtracking in _sre): no
Python-level check ever runs, RLIMIT_CPU's SIGXCPU ends it."""
import re
re.match(r"(a+)+$", "a" * 64 + "b")
