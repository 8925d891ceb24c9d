"""dsl.py — a three-function stand-in for arc-dsl's dsl.py, written for the
tests of bench/arc_dsl_corpus.py (no arc-dsl code): same layout, so the
generator reads it as it reads a real checkout."""
from arc_types import *  # noqa: F401,F403


def vmirror(grid):
    return tuple(row[::-1] for row in grid)


def hmirror(grid):
    return grid[::-1]


def replace(grid, a, b):
    return tuple(tuple(b if c == a else c for c in row) for row in grid)
