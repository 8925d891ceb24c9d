F = False
T = True

ZERO = 0
ONE = 1
TWO = 2
SIX = 6
