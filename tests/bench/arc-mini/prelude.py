"""prelude.py — a tiny stand-in for the arc-dsl prelude of
bench/arc_dsl_corpus.py (no arc-dsl code): grids are tuples of tuples, and
F/T are False/True as in arc-dsl's constants."""
import numpy as np  # noqa: F401

F, T = False, True
ZERO, ONE = 0, 1


def vmirror(grid):
    return tuple(row[::-1] for row in grid)


def hmirror(grid):
    return grid[::-1]


def replace(grid, a, b):
    return tuple(tuple(b if c == a else c for c in row) for row in grid)
