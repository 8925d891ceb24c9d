# expect: ok
# stdout: statistics.median=3 fractions=1/3 difflib=0.75
"""Allowed: importing stdlib modules the worker had not imported (read-only
opens of .py/.pyc and stat/getdents)."""
import sys
fresh = [m for m in ("statistics", "fractions", "difflib") if m not in sys.modules]
assert fresh == ["statistics", "fractions", "difflib"], fresh
import statistics, fractions, difflib
print("statistics.median=%d fractions=%s difflib=%.2f" % (
    statistics.median([1, 3, 5]), fractions.Fraction(2, 6),
    difflib.SequenceMatcher(None, "abcd", "abce").ratio()))
