# expect: signal SIGSEGV
# policy: preset=python;stack=8M
"""Overflowing the C stack: repr of a deeply nested list recurses in C with
the recursion limit lifted."""
import sys
sys.setrecursionlimit(1 << 30)
nested = []
for _ in range(1_000_000):
    nested = [nested]
repr(nested)
