# expect: ok
# stdout: caught 4 exceptions
"""Allowed: raising and catching exceptions, tracebacks formatted in memory."""
import traceback
caught = 0
for exc in (ValueError("v"), KeyError("k"), ZeroDivisionError, IndexError):
    try:
        try:
            raise exc
        except (ValueError, KeyError, ZeroDivisionError, IndexError) as e:
            traceback.format_exc()
            raise RuntimeError("wrapped") from e
    except RuntimeError:
        caught += 1
print("caught %d exceptions" % caught)
