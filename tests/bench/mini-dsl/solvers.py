from dsl import *
from constants import *


def solve_67a3c6ac(I):
    x1 = hmirror(I)
    x2 = vmirror(x1)
    O = hmirror(x2)
    return O


def solve_68b16354(I):
    x1 = vmirror(I)
    x2 = hmirror(x1)
    O = vmirror(x2)
    return O


def solve_b1948b0a(I):
    x1 = replace(I, SIX, TWO)
    x2 = vmirror(x1)
    O = vmirror(x2)
    return O
