"""fitrun from Python: one warm `fitrun run` for a whole program.

    import fitrun
    with fitrun.Runner(profile="profiles/arc-python.ini") as r:
        results = r.map(jobs)                 # result dicts, in input order
        for res in r.imap_unordered(jobs):    # as they finish
            ...
        fut = r.submit(job)                   # a concurrent.futures.Future

Jobs and results are the dicts `fitrun run` reads and writes (docs/run.md,
docs/python-runtime.md). ARC helpers: fitrun.arc. Standard library only.
"""
from ._binary import find_fitrun
from ._errors import RunnerError
from ._runner import Runner

__version__ = "0.1.0"
__all__ = ["Runner", "RunnerError", "find_fitrun", "__version__"]
