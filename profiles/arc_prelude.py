"""arc_prelude.py — run once per `fitrun run` by the warm Python runtime
(profiles/arc-python.ini), before any worker is forked.

Everything imported here is imported once and shared by every prediction
(copy-on-write after fork), so a prediction that says `import numpy as np`
pays nothing. Import what LLM-written ARC solutions commonly use; a module
a prediction imports that is not here still works (read-only opens are
allowed by the python sandbox preset) but costs its import time in every
child that needs it.

Each prediction runs in a fresh copy of this module's globals, so the
names below are also available without an import (as in a notebook that
ran `import numpy as np` first).

No fitrun_input/fitrun_output hooks: ARC predictions take and return a
grid as a list of lists; outputs that are numpy arrays, tuples or numpy
integers are normalised to lists and ints by the runtime.
"""
import collections  # noqa: F401
import copy  # noqa: F401
import functools  # noqa: F401
import heapq  # noqa: F401
import itertools  # noqa: F401
import math  # noqa: F401
import random  # noqa: F401
import re  # noqa: F401
import typing  # noqa: F401
from collections import Counter, defaultdict, deque  # noqa: F401
from typing import Dict, List, Optional, Set, Tuple  # noqa: F401

import numpy  # noqa: F401
import numpy as np  # noqa: F401
