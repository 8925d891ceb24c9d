#!/usr/bin/env bats
# `[runtime] isolation = reuse`: one sandboxed process per worker runs
# consecutive predictions. Real /usr/bin/python3 workers, real fitrun, one
# worker so that jobs run in their order in one process. Each poisoning
# prediction is followed by honest ones whose results must be exactly what
# they are under fork isolation, and its result must say why its process
# was replaced (worker_replaced). Also: max_predictions, max_memory, the
# per-prediction CPU budget of a long-lived process, the config checks.

load python_common

setup() {
    FITRUN=${FITRUN:?FITRUN must point at the fitrun binary}
    D=$BATS_TEST_TMPDIR
    printf 'import numpy as np\nimport collections\nimport json\nTABLE = (1, 2, 3)\nGRID = [[3, 1], [2, 0]]\nCOLORS = {"red": 2}\nARR = np.zeros(3)\ndef helper(x):\n    return x + 1\n' > "$D/prelude.py"
    profile "$D/p.ini" "isolation = reuse"
    profile "$D/fork.ini"
}

teardown() {
    local pids
    pids=$(pgrep -f "$D/" || true)
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
}

# profile FILE [EXTRA INI LINES for [runtime]]
profile() {
    python_profile "$1" 1 4s 1G "${@:2}"
}

# run_with PROFILE OUT [options]: run $D/jobs.jsonl
run_with() {
    run --separate-stderr "$FITRUN" run --profile "$1" --jobs "$D/jobs.jsonl" --out "$2" --progress none "${@:3}"
}

# r FILE ID FILTER
r() {
    jq -c --arg id "$2" "select(.id == \$id) | $3" "$1"
}

# An honest prediction that reads everything a poisoner goes for: builtins,
# the prelude's names, numpy, collections, json, os, random, warnings, cwd.
honest() {
    job "$1" $'import os, random, warnings, json as j\ndef transform(g):\n    print(np.random.random(), random.random() < 1)\n    warnings.warn("w")\n    c = collections.Counter([1, 1, 2])\n    return [len(g), sum([1, 2]), helper(1), list(TABLE), int(np.sum(np.array([1, 2]))), float(np.float64(1.0) / 0.0) if False else str(np.float64(1.0) / np.float64(0.0)), c.most_common(1)[0][0], j.dumps([1]), os.getcwd(), os.environ.get("POISON"), [fd for fd in range(7, 64) if opened(fd)]]\ndef opened(fd):\n    try:\n        os.fstat(fd)\n        return True\n    except OSError:\n        return False\n'
}

poison_jobs() {
    local name=$1 code=$2
    {
        honest "before-$name"
        job "$name" "$code"
        honest "after-$name"
        honest "after2-$name"
    } > "$D/jobs.jsonl"
}

# run_both: run $D/jobs.jsonl under reuse ($D/reuse.jsonl) and under fork
# isolation ($D/fork.jsonl); both runs succeed.
run_both() {
    run_with "$D/p.ini" "$D/reuse.jsonl"
    [ "$status" -eq 0 ]
    run_with "$D/fork.ini" "$D/fork.jsonl"
    [ "$status" -eq 0 ]
}

# Both runs, and under reuse the status and outputs fork gives, for every job.
same_as_fork() {
    run_both
    [ "$(jq -sc 'map([.id, .status, .outputs])' "$D/reuse.jsonl")" = "$(jq -sc 'map([.id, .status, .outputs])' "$D/fork.jsonl")" ] ||
        { cat "$D/fork.jsonl" "$D/reuse.jsonl"; false; }
}

# fork_and_reuse FORK REUSE: run $D/jobs.jsonl under fork and under reuse
# isolation; each run's [id, status, outputs, worker_replaced] list is the
# one given (a documented limit: what reuse lets through and fork does not).
fork_and_reuse() {
    run_both
    [ "$(jq -sc 'map([.id, .status, .outputs, .worker_replaced])' "$D/fork.jsonl")" = "$1" ] || { cat "$D/fork.jsonl"; false; }
    [ "$(jq -sc 'map([.id, .status, .outputs, .worker_replaced])' "$D/reuse.jsonl")" = "$2" ] || { cat "$D/reuse.jsonl"; false; }
}

# check_poison NAME REASON_REGEX: the honest results under reuse equal the
# fork ones, and NAME's process was replaced for REASON_REGEX.
check_poison() {
    local name=$1 want=$2
    run_both
    local id
    for id in "before-$name" "after-$name" "after2-$name"; do
        [ "$(r "$D/reuse.jsonl" "$id" '[.status, .outputs]')" = "$(r "$D/fork.jsonl" "$id" '[.status, .outputs]')" ]
        [ "$(r "$D/reuse.jsonl" "$id" .status)" = '"ok"' ]
    done
    local why
    why=$(r "$D/reuse.jsonl" "$name" '.worker_replaced')
    echo "replaced: $why"
    [[ "$why" =~ $want ]]
    # numpy's global generator starts where it did in the first process
    # (a fork child's does the same).
    [ "$(r "$D/reuse.jsonl" "before-$name" .stdout)" = "$(r "$D/reuse.jsonl" "after-$name" .stdout)" ]
    # The honest ones ran on: only the poisoner's process was replaced.
    [ "$(r "$D/reuse.jsonl" "before-$name" '.worker_replaced')" = null ]
    [ "$(r "$D/reuse.jsonl" "after-$name" '.worker_replaced')" = null ]
    [ "$(r "$D/fork.jsonl" "$name" 'has("worker_replaced")')" = false ]
}

@test "python reuse: consecutive predictions share one process, with the outputs fork gives" {
    {
        for i in 1 2 3 4; do honest "h$i"; done
        job pid $'import os\ndef transform(g):\n    print(os.getpid())\n    return g\n'
        job pid2 $'import os\ndef transform(g):\n    print(os.getpid())\n    return g\n'
    } > "$D/jobs.jsonl"
    run_both
    for i in 1 2 3 4; do
        [ "$(r "$D/reuse.jsonl" "h$i" '[.status, .outputs]')" = "$(r "$D/fork.jsonl" "h$i" '[.status, .outputs]')" ]
    done
    [ "$(r "$D/reuse.jsonl" pid .stdout)" = "$(r "$D/reuse.jsonl" pid2 .stdout)" ]
    [ "$(r "$D/fork.jsonl" pid .stdout)" != "$(r "$D/fork.jsonl" pid2 .stdout)" ]
    [ "$(jq -s 'map(select(.worker_replaced)) | length' "$D/reuse.jsonl")" -eq 0 ]
}

@test "python reuse: a replaced builtin is found and its process replaced" {
    poison_jobs builtins $'import builtins\nbuiltins.len = lambda x: 99\nbuiltins.sum = lambda x: -1\ndef transform(g):\n    return g\n'
    check_poison builtins '^"poisoned: module builtins was changed \(len replaced\)"$'
}

@test "python reuse: a patched prelude name, numpy function or stdlib module is found" {
    poison_jobs prelude $'import fitrun_prelude\nfitrun_prelude.helper = lambda x: 42\ndef transform(g):\n    return g\n'
    check_poison prelude 'poisoned: module fitrun_prelude was changed \(helper replaced\)'
    poison_jobs numpy $'import numpy\nnumpy.sum = lambda *a, **k: 7\ndef transform(g):\n    return g\n'
    check_poison numpy 'poisoned: module numpy was changed \(sum replaced\)'
    poison_jobs json $'import json\ndel json.dumps\ndef transform(g):\n    return g\n'
    check_poison json 'poisoned: module json was changed \(dumps removed\)'
    # The mapping of builtins and prelude names every prediction's globals
    # fall back to is one dict, shared by the process's predictions.
    poison_jobs shared $'__builtins__["helper"] = lambda x: 42\n__builtins__["sum"] = lambda *a: 7\ndef transform(g):\n    return g\n'
    check_poison shared "poisoned: the predictions' builtins was changed \\((helper|sum) replaced\\)"
}

@test "python reuse: the prelude's data changed in place is found: a list sorted, a dict entry added, a nested item, an array" {
    # An identity check cannot see these; the prelude's containers and
    # arrays are compared by content.
    poison_jobs sorted $'def transform(g):\n    GRID.sort()\n    return g\n'
    check_poison sorted 'poisoned: fitrun_prelude.GRID was changed in place'
    poison_jobs nested $'def transform(g):\n    GRID[0][0] = 9\n    return g\n'
    check_poison nested 'poisoned: fitrun_prelude.GRID was changed in place'
    poison_jobs added $'def transform(g):\n    COLORS["blue"] = 1\n    return g\n'
    check_poison added 'poisoned: fitrun_prelude.COLORS was changed in place'
    poison_jobs array $'def transform(g):\n    ARR[1] = 5\n    return g\n'
    check_poison array 'poisoned: fitrun_prelude.ARR was changed in place'
}

@test "python reuse: the prelude's data in a class, an object, a function's defaults or closure, changed, is found" {
    printf 'class Cache:\n    seen = {}\n    def add(self, x, acc=[]):\n        acc.append(x)\n        return len(acc)\ndef memo(x, seen=[]):\n    seen.append(x)\n    return len(seen)\nclass Box:\n    pass\nBOX = Box()\nBOX.items = [1]\ndef counter():\n    n = 0\n    def bump():\n        nonlocal n\n        n += 1\n        return n\n    return bump\nbump = counter()\n' >> "$D/prelude.py"
    local read=$'def transform(g):\n    return [len(Cache.seen), memo(0), Cache().add(0), len(BOX.items), bump()]\n'
    {
        job class $'def transform(g):\n    Cache.seen[1] = 1\n    return 0\n'
        job read1 "$read"
        job default $'def transform(g):\n    return memo(1)\n'
        job read2 "$read"
        job method $'def transform(g):\n    return Cache().add(1)\n'
        job read3 "$read"
        job object $'def transform(g):\n    BOX.items.append(2)\n    return 0\n'
        job read4 "$read"
        job closure $'def transform(g):\n    return bump()\n'
        job read5 "$read"
    } > "$D/jobs.jsonl"
    same_as_fork
    [ "$(r "$D/reuse.jsonl" read1 .outputs)" = '[[0,1,1,1,1]]' ]
    [ "$(r "$D/reuse.jsonl" class .worker_replaced)" = '"poisoned: fitrun_prelude.Cache.seen was changed in place"' ]
    [ "$(r "$D/reuse.jsonl" default .worker_replaced)" = "\"poisoned: fitrun_prelude.memo's default 1 was changed in place\"" ]
    [ "$(r "$D/reuse.jsonl" method .worker_replaced)" = "\"poisoned: fitrun_prelude.Cache.add's default 1 was changed in place\"" ]
    [ "$(r "$D/reuse.jsonl" object .worker_replaced)" = '"poisoned: fitrun_prelude.BOX.items was changed in place"' ]
    [ "$(r "$D/reuse.jsonl" closure .worker_replaced)" = "\"poisoned: fitrun_prelude.bump's variable n was assigned\"" ]
}

@test "python reuse: the prelude's Counter, defaultdict, OrderedDict, deque or namedtuple changed in place is found" {
    printf 'COUNTS = collections.Counter()\nBY = collections.defaultdict(list)\nQ = collections.deque()\nP = collections.namedtuple("P", "items")([1])\nOD = collections.OrderedDict(a=1, b=2)\n' >> "$D/prelude.py"
    local read=$'def transform(g):\n    return [sum(COUNTS.values()), len(BY), len(Q), len(P.items), list(OD)]\n'
    local name code
    {
        for name in COUNTS BY Q P OD; do
            case $name in
                COUNTS) code='COUNTS["x"] += 1' ;;
                BY) code='BY["k"].append(1)' ;;
                Q) code='Q.append(1)' ;;
                P) code='P.items.append(2)' ;;
                OD) code='OD.move_to_end("a")' ;;
            esac
            job "$name" "def transform(g):"$'\n'"    $code"$'\n'"    return 0"$'\n'
            job "read-$name" "$read"
        done
    } > "$D/jobs.jsonl"
    same_as_fork
    [ "$(r "$D/reuse.jsonl" read-OD .outputs)" = '[[0,0,0,1,["a","b"]]]' ]
    for name in COUNTS BY Q P OD; do
        [ "$(r "$D/reuse.jsonl" $name .worker_replaced)" = "\"poisoned: fitrun_prelude.$name was changed in place\"" ]
    done
}

@test "python reuse: a replaced sys.modules entry is found" {
    poison_jobs sysmod $'import sys, types\nfake = types.ModuleType("json")\nfake.dumps = lambda x: "forged"\nsys.modules["json"] = fake\ndef transform(g):\n    return g\n'
    check_poison sysmod 'poisoned: sys.modules entries were replaced or removed'
}

@test "python reuse: a prediction cannot open its own memory to write a namespace past its write counter" {
    # The check's fast path trusts the dicts' version tags: a write into a
    # dict's memory that bypasses the dict would not move them. Through a
    # file, the ways there are /proc/self/mem and the same file through
    # /proc/PID; the sandbox refuses them. (Python's own ways there are the
    # next test's: beyond any in-process check.)
    poison_jobs memwrite $'import os\ndef transform(g):\n    out = []\n    for path in ("/proc/self/mem", f"/proc/{os.getpid()}/mem", "/proc/thread-self/mem"):\n        for mode in (os.O_RDWR, os.O_WRONLY):\n            try:\n                os.close(os.open(path, mode))\n                out.append("opened " + path)\n            except OSError as e:\n                out.append(type(e).__name__)\n    return out\n'
    run_with "$D/p.ini" "$D/reuse.jsonl"
    [ "$status" -eq 0 ]
    [ "$(r "$D/reuse.jsonl" memwrite '[.status, (.outputs[0] | map(select(startswith("opened"))))]')" = '["ok",[]]' ] || { r "$D/reuse.jsonl" memwrite .; false; }
    [ "$(r "$D/reuse.jsonl" after-memwrite .status)" = '"ok"' ]
}

@test "python reuse: a raw memory write (ctypes.memmove, numpy's array interface) is beyond the check: the documented limit" {
    # docs/python-runtime.md, "What reuse does not guarantee": CPython lets
    # Python code write any byte of its process with no audit event (a call
    # through a function pointer ctypes made at import; an object whose
    # __array_interface__ names an address). Here a prediction replaces a
    # name in the predictions' shared builtins and puts that dict's version
    # tag back, so the check and the tripwire see nothing, and the honest
    # predictions after it in that process return the planted value. Fork
    # isolation is unaffected. If this test fails, reuse has become
    # stronger than its documentation says: update both.
    local write
    for write in ctypes numpy; do
        case $write in
        ctypes) code=$'import ctypes\ndef transform(g):\n    d = __builtins__\n    tag = (ctypes.c_char * 8)()\n    ctypes.memmove(tag, id(d) + 24, 8)\n    d["helper"] = lambda x: 42\n    ctypes.memmove(id(d) + 24, tag, 8)\n    return g\n' ;;
        numpy) code=$'class Raw:\n    pass\ndef transform(g):\n    d = __builtins__\n    r = Raw()\n    r.__array_interface__ = {"data": (id(d) + 24, False), "shape": (1,), "typestr": "<u8", "version": 3}\n    tag = np.asarray(r)\n    before = int(tag[0])\n    d["helper"] = lambda x: 42\n    tag[0] = before\n    return g\n' ;;
        esac
        {
            job "before-$write" $'def transform(g):\n    return helper(1)\n'
            job "$write" "$code"
            job "after-$write" $'def transform(g):\n    return helper(1)\n'
        } > "$D/jobs.jsonl"
        fork_and_reuse "[[\"before-$write\",\"ok\",[2],null],[\"$write\",\"ok\",[[[1]]],null],[\"after-$write\",\"ok\",[2],null]]" \
            "[[\"before-$write\",\"ok\",[2],null],[\"$write\",\"ok\",[[[1]]],null],[\"after-$write\",\"ok\",[42],null]]"
    done
}

@test "python reuse: the stdlib's and packages' caches (a finder in sys.path_importer_cache and a finder's loaders, re's compiled patterns, json's escapes, a module's __all__) are put back: the next prediction sees what fork gives it" {
    # docs/python-runtime.md, "And the standard library's and packages'
    # containers": every dict, list and set that a module of the standard
    # library or of a package holds, and those below them, are put back by
    # content after each prediction. Without that, a later prediction's
    # import, re.match, json escape and `from numpy import *` would see what
    # an earlier one planted.
    local finder=$'import sys, importlib.util\nclass Loader:\n    def create_module(self, spec):\n        return None\n    def exec_module(self, module):\n        module.rgb_to_hsv = lambda *a: (42,)\nclass Finder:\n    def __init__(self, real):\n        self.real = real\n    def find_spec(self, name, target=None):\n        if name == "colorsys":\n            return importlib.util.spec_from_loader(name, Loader())\n        return self.real.find_spec(name, target)\n    def invalidate_caches(self):\n        pass\nfor p, f in list(sys.path_importer_cache.items()):\n    if f is not None and hasattr(f, "find_spec"):\n        sys.path_importer_cache[p] = Finder(f)\ndef transform(g):\n    return g\n'
    local loaders=$'import sys\nclass Loader:\n    def __init__(self, name, path):\n        pass\n    def create_module(self, spec):\n        return None\n    def exec_module(self, module):\n        module.rgb_to_hsv = lambda *a: (42,)\nfor f in list(sys.path_importer_cache.values()):\n    if f is not None and hasattr(f, "_loaders"):\n        f._loaders.insert(0, (".py", Loader))\ndef transform(g):\n    return g\n'
    local recache=$'import re\nre._cache[(str, "a+", 0)] = re.compile("b")\ndef transform(g):\n    return g\n'
    local tables=$'import numpy, json.encoder\nnumpy.__all__.remove("sum")\njson.encoder.ESCAPE_DCT["a"] = "b"\ndef transform(g):\n    return g\n'
    local honest=$'import colorsys, re, json.encoder\nfrom numpy import *\ndef transform(g):\n    return [colorsys.rgb_to_hsv(0.2, 0.4, 0.4)[0], bool(re.match("a+", "aaa")), str(sum([[1], [2]])), json.encoder.py_encode_basestring("a")]\n'
    local want='[["before","ok",[[0.5,true,"3","\"a\""]],null]' name
    {
        job before "$honest"
        for name in finder loaders recache tables; do
            job "$name" "${!name}"
            job "after-$name" "$honest"
            want+=",[\"$name\",\"ok\",[[[1]]],null],[\"after-$name\",\"ok\",[[0.5,true,\"3\",\"\\\"a\\\"\"]],null]"
        done
    } > "$D/jobs.jsonl"
    fork_and_reuse "$want]" "$want]"
}

@test "python reuse: context variables a prediction sets (its own ContextVar, decimal's context) do not reach the next one; the prelude's reach every one, as under fork" {
    # Each prediction runs in a copy of the zygote's context
    # (docs/python-runtime.md, "Restored after each prediction"): without
    # it a ContextVar set by one prediction was in the next one's
    # contextvars.copy_context().
    printf 'import decimal\ndecimal.getcontext().prec = 5\n' >> "$D/prelude.py"
    local read=$'import contextvars, decimal\ndef transform(g):\n    return [len(contextvars.copy_context()), str(decimal.Decimal(1) / decimal.Decimal(3))]\n'
    {
        job before "$read"
        job plant $'import contextvars, decimal\nV = contextvars.ContextVar("planted")\nV.set(42)\ndecimal.setcontext(decimal.Context(prec=2))\ndef transform(g):\n    return g\n'
        job after "$read"
    } > "$D/jobs.jsonl"
    local want='[["before","ok",[[1,"0.33333"]],null],["plant","ok",[[[1]]],null],["after","ok",[[1,"0.33333"]],null]]'
    fork_and_reuse "$want" "$want"
}

@test "python reuse: what the stdlib's lru_caches hold (typing's), a stdlib object's slots, a functools.partial's keywords and state, a dict subclass's entries, a function's default list, a package's array, a threading.Condition's waiters (a deque) and a cache in the prelude's closures are put back or emptied; a callable object's attributes are checked: the next prediction sees what fork gives it" {
    # typing gives one typing.List[int] to every caller, from a
    # functools.lru_cache kept in C: an entry the zygote had (Optional[str])
    # is put back with the stdlib's containers, one a prediction made
    # (Dict[str, int]) goes with the cache, emptied after it. The
    # prelude's own cache in a decorator's closure is emptied too. A
    # typing._SpecialForm keeps its name and the function behind its [...]
    # in slots, put back too.
    printf 'import functools\ndef _memo(f):\n    c = functools.lru_cache(maxsize=None)(f)\n    def g(*a):\n        return c(*a)\n    return g\n@_memo\ndef palette():\n    return [1, 2]\nclass Adder:\n    def __init__(self):\n        self.k = 1\n    def __call__(self, x):\n        return x + self.k\nadd = Adder()\nvec = np.vectorize(lambda x: x + 1)\n' >> "$D/prelude.py"
    profile "$D/p.ini" "isolation = reuse"
    profile "$D/fork.ini"
    reader=$'import typing, fitrun_prelude as p\ndef transform(g):\n    return [repr(typing.List[int]), repr(typing.Optional[str]), repr(typing.Dict[str, int]), repr(typing.ClassVar), p.palette(), p.add(1), int(p.vec(1))]\n'
    {
        job before "$reader"
        job cached $'import typing\ntyping.List[int]._name = "P1"\ntyping.Optional[str].__args__ = (int,)\ntyping.Dict[str, int]._name = "P3"\ndef transform(g):\n    return g\n'
        job cached-after "$reader"
        job closure $'import fitrun_prelude as p\np.palette().append(9)\ndef transform(g):\n    return g\n'
        job closure-after "$reader"
        job callable $'import fitrun_prelude as p\np.add.k = 100\ndef transform(g):\n    return g\n'
        job callable-after "$reader"
        job vectorize $'import fitrun_prelude as p\np.vec.pyfunc = lambda x: x + 50\ndef transform(g):\n    return g\n'
        job vectorize-after "$reader"
        job alias $'import typing\ntyping.List._name = "P4"\ndef transform(g):\n    return g\n'
        job alias-after "$reader"
        job slots $'import typing\ntyping.ClassVar._name = "P5"\ntyping._SpecialForm._getitem.__set__(typing.Optional, lambda self, p: int)\ndef transform(g):\n    return [repr(typing.Optional[bytes])]\n'
        job slots-after $'import typing\ndef transform(g):\n    return [repr(typing.ClassVar), repr(typing.Optional[bytes])]\n'
        # numpy 1 prints arrays through a functools.partial that C keeps;
        # its keywords are a dict of its own, its __setstate__ replaces its
        # function. np.nbytes is a dict subclass.
        arrays=$'import numpy as np\ndef transform(g):\n    return [repr(np.array([1, 2])), int(np.nbytes[np.int64])]\n'
        job partial $'import numpy as np\nnp.core.arrayprint._default_array_repr.keywords["array2string"] = lambda *a, **k: "P6"\ndef transform(g):\n    return g\n'
        job partial-after "$arrays"
        job setstate $'import numpy as np\nnp.core.arrayprint._default_array_repr.__setstate__((lambda a, **k: "P7", (), {}, None))\ndef transform(g):\n    return g\n'
        job setstate-after "$arrays"
        job subclass $'import numpy as np\nnp.nbytes[np.int64] = 3\ndef transform(g):\n    return g\n'
        job subclass-after "$arrays"
        # argparse.ArgumentParser's `parents=[]`: one list for every call.
        job default $'import argparse\np = argparse.ArgumentParser(add_help=False)\np.add_argument("--planted", default="P8")\nargparse.ArgumentParser.__init__.__defaults__[4].append(p)\ndef transform(g):\n    return g\n'
        job default-after $'import argparse\ndef transform(g):\n    return [vars(argparse.ArgumentParser().parse_args([]))]\n'
        # numpy.polynomial's module-level arrays are writable.
        job array $'import numpy as np\nnp.polynomial.polynomial.polyx[0] = 5\ndef transform(g):\n    return g\n'
        job array-after $'import numpy as np\ndef transform(g):\n    return [np.polynomial.polynomial.polyx.tolist()]\n'
        # A Condition keeps its waiters in a deque: the main thread's
        # `_started` is never waited on again, so what is left there stays.
        job deque $'import threading\nthreading.main_thread()._started._cond._waiters.append("P9")\ndef transform(g):\n    return g\n'
        job deque-after $'import threading\ndef transform(g):\n    return list(threading.main_thread()._started._cond._waiters)\n'
    } > "$D/jobs.jsonl"
    same_as_fork
    [ "$(r "$D/fork.jsonl" before .outputs)" = '[["typing.List[int]","typing.Optional[str]","typing.Dict[str, int]","typing.ClassVar",[1,2],2,2]]' ]
    [ "$(r "$D/fork.jsonl" deque-after .outputs)" = '[[]]' ]
    [ "$(jq -sc 'map(select(.worker_replaced) | [.id, .worker_replaced])' "$D/reuse.jsonl")" = '[["callable","poisoned: object fitrun_prelude.add was changed (k replaced)"],["vectorize","poisoned: object fitrun_prelude.vec was changed (pyfunc replaced)"],["alias","poisoned: object typing.List was changed (_name replaced)"]]' ] || { cat "$D/reuse.jsonl"; false; }
}

@test "python reuse: a value that claims to equal the original is still a change" {
    poison_jobs eq $'import fitrun_prelude\nclass Liar:\n    def __eq__(self, o):\n        return True\n    __hash__ = object.__hash__\n    def __call__(self, x):\n        return 0\nfitrun_prelude.helper = Liar()\ndef transform(g):\n    return g\n'
    check_poison eq 'poisoned: module fitrun_prelude was changed \(helper replaced\)'
}

@test "python reuse: a monkeypatched class or module-level object is found" {
    poison_jobs klass $'import collections\ncollections.Counter.most_common = lambda self, n=None: [(5, 5)]\ndef transform(g):\n    return g\n'
    check_poison klass '^"poisoned: class collections.Counter was changed \(most_common replaced\)"$'
    poison_jobs bases $'import collections\nclass Evil:\n    def most_common(self, n=None):\n        return [(5, 5)]\ncollections.Counter.__bases__ = (Evil, dict)\ndef transform(g):\n    return g\n'
    # Swapped bases: assigning __bases__ is an audited type attribute write,
    # which the tripwire reports; or the process ended first (seen once on a
    # heavily loaded machine; the cause was not established): replaced
    # either way.
    check_poison bases '^"(poisoned: it used object.__setattr__|ended: )'
    poison_jobs bases2 $'import collections\nclass Evil:\n    def most_common(self, n=None):\n        return [(5, 5)]\ntype.__dict__["__bases__"].__set__(collections.Counter, (Evil, dict))\ndef transform(g):\n    return g\n'
    check_poison bases2 '^"(poisoned: it used object.__setattr__|ended: )'
    poison_jobs encoder $'import json\njson._default_encoder.indent = 4\ndef transform(g):\n    return g\n'
    check_poison encoder '^"poisoned: object json._default_encoder was changed \(indent replaced\)"$'
}

@test "python reuse: a function's code, frames, tracebacks and gc trip the tripwire" {
    poison_jobs code $'import fitrun_prelude\nfitrun_prelude.helper.__code__ = (lambda x: 42).__code__\ndef transform(g):\n    return g\n'
    check_poison code '^"poisoned: it used object.__(get|set)attr__"$'
    # The runtime's own frame holds its state: reaching it is reported first.
    poison_jobs frame $'import sys\ndef transform(g):\n    f = sys._getframe(1)\n    while f.f_back is not None:\n        f = f.f_back\n    return g\n'
    check_poison frame '^"poisoned: it used sys._getframe"$'
    poison_jobs gc $'import gc\ndef transform(g):\n    for o in gc.get_objects():\n        if type(o) is dict and "helper" in o:\n            o["helper"] = lambda x: 0\n    return g\n'
    check_poison gc '^"poisoned: it used gc.get_objects"$'
    poison_jobs tb $'def transform(g):\n    try:\n        1 / 0\n    except ZeroDivisionError as e:\n        f = e.__traceback__.tb_frame\n    return g\n'
    check_poison tb '^"poisoned: it used object.__getattr__"$'
}

@test "python reuse: an audit hook is refused, and a later prediction's code is never seen by it" {
    poison_jobs audit $'import sys\ndef spy(ev, args):\n    if ev == "compile":\n        print("SEEN", args[0][:20] if isinstance(args[0], (str, bytes)) else "")\nsys.addaudithook(spy)\ndef transform(g):\n    return g\n'
    check_poison audit '^"poisoned: it used sys.addaudithook"$'
    [[ "$(r "$D/reuse.jsonl" after-audit .stdout)" != *SEEN* ]]
}

@test "python reuse: an error's line is reported without tripping the tripwire" {
    {
        job err $'def transform(g):\n    x = 1\n    return g[7]\n'
        honest after-err
    } > "$D/jobs.jsonl"
    run_with "$D/p.ini" "$D/reuse.jsonl"
    [ "$status" -eq 0 ]
    [ "$(r "$D/reuse.jsonl" err '[.status, .error_type, .error_line, .worker_replaced]')" = '["error","IndexError",3,null]' ]
    [ "$(r "$D/reuse.jsonl" after-err '[.status, .worker_replaced]')" = '["ok",null]' ]
}

@test "python reuse: process state a prediction changes is restored or its process replaced" {
    # Restored (the process runs on): cwd, umask, signal handlers and an
    # armed timer, fds left open, warnings filters, numpy's error mode,
    # the random generators.
    poison_jobs restored $'import os, signal, warnings, random\nimport numpy\ndef boom(*a):\n    raise SystemExit(3)\ndef transform(g):\n    os.chdir("/")\n    os.umask(0)\n    signal.signal(signal.SIGALRM, boom)\n    signal.setitimer(signal.ITIMER_REAL, 0.3)\n    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n    os.dup2(1, 40)\n    os.dup(3)\n    warnings.simplefilter("error")\n    numpy.seterr(all="raise")\n    random.seed(7)\n    numpy.random.seed(7)\n    return g\n'
    {
        cat "$D/jobs.jsonl"
        # Runs past the timer the poisoner armed; numpy's 1/0 warns, not raises.
        job after-timer $'import time, numpy\ndef transform(g):\n    time.sleep(0.5)\n    return [str(numpy.float64(1) / numpy.float64(0))]\n'
    } > "$D/jobs2.jsonl"
    mv "$D/jobs2.jsonl" "$D/jobs.jsonl"
    run_both
    for id in before-restored after-restored after2-restored after-timer; do
        [ "$(r "$D/reuse.jsonl" $id '[.status, .outputs]')" = "$(r "$D/fork.jsonl" $id '[.status, .outputs]')" ]
    done
    [ "$(r "$D/reuse.jsonl" after-timer '[.status, .outputs]')" = '["ok",[["inf"]]]' ]
    [ "$(r "$D/reuse.jsonl" restored '[.status, .worker_replaced]')" = '["ok",null]' ]
    # Replaced: the environment, exit functions and resource limits.
    poison_jobs env $'import os\nos.environ["POISON"] = "1"\ndef transform(g):\n    return g\n'
    check_poison env '^"poisoned: os.environ was changed"$'
    # A function registered to run at exit, which a later prediction could
    # count or run (atexit._run_exitfuncs).
    poison_jobs atexit $'import atexit\natexit.register(print, "planted")\ndef transform(g):\n    return g\n'
    check_poison atexit '^"poisoned: atexit._ncallbacks\(\) changed"$'
    poison_jobs rlimit $'import resource\nresource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))\ndef transform(g):\n    return g\n'
    run_with "$D/p.ini" "$D/reuse.jsonl"
    [ "$status" -eq 0 ]
    # The python preset refuses setting rlimits (a violation, so the process
    # ends), or the tripwire reports it: either way it is replaced.
    [[ "$(r "$D/reuse.jsonl" rlimit .worker_replaced)" =~ ^\"(ended|poisoned: it used resource.setrlimit) ]]
    [ "$(r "$D/reuse.jsonl" after-rlimit .status)" = '"ok"' ]
}

@test "python reuse: on Python 3.12 and later, a sys.monitoring tool id left in use, or its events, or perf's trampoline activated, has its process replaced" {
    # Kept in C: a tool id left in use made a later prediction's
    # use_tool_id fail, and a later prediction could read both.
    local exe
    exe=$(ls -d /root/.pyenv/versions/3.1[2-9]*/bin/python3 2>/dev/null | head -n 1 || true)
    [ -n "$exe" ] || skip "no CPython 3.12 or later here besides /usr/bin/python3 (pyenv)"
    printf 'TABLE = (1, 2, 3)\n' > "$D/prelude.py"
    local reader=$'import sys\ndef transform(g):\n    try:\n        sys.monitoring.use_tool_id(2, "mine")\n        sys.monitoring.free_tool_id(2)\n        return "free"\n    except ValueError:\n        return "taken"\n'
    {
        job tool $'import sys\ndef transform(g):\n    sys.monitoring.use_tool_id(2, "planted")\n    return 0\n'
        job tool-after "$reader"
        job events $'import sys\ndef transform(g):\n    sys.monitoring.use_tool_id(4, "planted")\n    sys.monitoring.set_events(4, sys.monitoring.events.PY_START)\n    return 0\n'
        job events-after $'import sys\ndef transform(g):\n    return [sys.monitoring.get_tool(4), sys.monitoring.get_events(4)]\n'
        job trampoline $'import sys\ndef transform(g):\n    sys.activate_stack_trampoline("perf")\n    return 0\n'
        job trampoline-after $'import sys\ndef transform(g):\n    return sys.is_stack_trampoline_active()\n'
    } > "$D/jobs.jsonl"
    # A pyenv build lives in root's home, which a slot's uid cannot read.
    run_with "$D/p.ini" "$D/reuse.jsonl" --set runtime.interpreter="$exe" --set sandbox.user=root
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    [ "$(jq -sc 'map([.id, .status, .outputs, .worker_replaced])' "$D/reuse.jsonl")" = \
        '[["tool","ok",[0],"poisoned: sys.monitoring.get_tool() changed"],["tool-after","ok",["free"],null],["events","ok",[0],"poisoned: sys.monitoring.get_tool() changed"],["events-after","ok",[[null,0]],null],["trampoline","ok",[0],"poisoned: sys.is_stack_trampoline_active() changed"],["trampoline-after","ok",[false],null]]' ] ||
        { cat "$D/reuse.jsonl"; false; }
}

@test "python reuse: settings kept in C and output left in buffers do not reach the next prediction" {
    # Each of these once reached the next prediction in the same process:
    # the C locale, the collector's debug output, the signal wakeup
    # descriptor, faulthandler, dlopen flags, the coroutine origin depth,
    # asyncgen hooks, a finalizer's print. They are put back; the process
    # runs on.
    local reader=$'import locale, gc, signal, faulthandler, sys, os\ndef transform(g):\n    gc.collect()\n    print("reader")\n    return [locale.setlocale(locale.LC_NUMERIC), gc.get_debug(), signal.set_wakeup_fd(-1), faulthandler.is_enabled(), sys.getdlopenflags(), sys.get_coroutine_origin_tracking_depth(), sys.get_asyncgen_hooks().firstiter is None, len(os.read(0, 1))]\n'
    {
        job settings $'import locale, gc, signal, faulthandler, sys, os\nclass Noisy:\n    def __del__(self):\n        print("a finalizer of the previous prediction")\ndef transform(g):\n    locale.setlocale(locale.LC_NUMERIC, "C.UTF-8")\n    gc.set_debug(gc.DEBUG_STATS)\n    os.set_blocking(1, False)\n    signal.set_wakeup_fd(1)\n    faulthandler.enable()\n    sys.setdlopenflags(258)\n    sys.set_coroutine_origin_tracking_depth(5)\n    sys.set_asyncgen_hooks(firstiter=print)\n    n = Noisy()\n    n.cycle = n\n    return 0\n'
        job reader "$reader"
        job closer $'import sys\ndef transform(g):\n    sys.stdout.close()\n    return 0\n'
        job reader2 "$reader"
        job reconfig $'import sys\ndef transform(g):\n    try:\n        sys.stderr.reconfigure(errors="replace", line_buffering=True)\n    except OSError:\n        pass\n    return 0\n'
        job reader3 "$reader"
    } > "$D/jobs.jsonl"
    run_both
    local id
    for id in settings reader closer reader2 reconfig reader3; do
        [ "$(r "$D/reuse.jsonl" $id '[.status, .outputs, .stdout, .stderr]')" = "$(r "$D/fork.jsonl" $id '[.status, .outputs, .stdout, .stderr]')" ] || { cat "$D/reuse.jsonl"; false; }
    done
    [ "$(r "$D/reuse.jsonl" reader '[.status, .outputs, .stdout]')" = '["ok",[["C",0,-1,false,2,0,true,0]],"reader\n"]' ]
    [ "$(r "$D/reuse.jsonl" settings .worker_replaced)" = null ]
    # A closed sys.stdout cannot be reopened as it was: the process goes.
    [ "$(r "$D/reuse.jsonl" closer .worker_replaced)" = '"poisoned: sys.stdout was closed"' ]
    [ "$(r "$D/reuse.jsonl" reconfig .worker_replaced)" = '"poisoned: sys.stderr was reconfigured"' ]
}

@test "python reuse: numpy's settings kept in C (its dtype name table, scalar promotion, scalars' print mode, huge pages) are put back" {
    # Each reached every later prediction in the same process: another
    # name table made np.dtype("float64") raise, weak promotion made
    # np.uint8(200) + 100 a uint8, the 1.13 print mode str(np.float64(0.1)
    # + 0.2) "0.3". (numpy 1.24 to 2.1 have the promotion switch; a
    # numpy without one of these runs that job as a no-op.)
    local core=$'m = getattr(np, "_core", None) or np.core\n    u = m._multiarray_umath\n'
    local reader=$'def transform(g):\n    '"$core"$'    hp = u._get_madvise_hugepage() if hasattr(u, "_get_madvise_hugepage") else None\n    return [str(np.dtype("float64")), str((np.uint8(200) + 100).dtype), str(np.float64(0.1) + np.float64(0.2)), hp]\n'
    {
        job reader0 "$reader"
        job types $'def transform(g):\n    '"$core"$'    u.set_typeDict({})\n    return 0\n'
        job reader1 "$reader"
        job promotion $'def transform(g):\n    '"$core"$'    if hasattr(u, "_set_promotion_state"):\n        u._set_promotion_state("weak")\n    return 0\n'
        job reader2 "$reader"
        job hugepage $'def transform(g):\n    '"$core"$'    if hasattr(u, "_set_madvise_hugepage"):\n        u._set_madvise_hugepage(not u._get_madvise_hugepage())\n    return 0\n'
        job reader3 "$reader"
        job legacy $'def transform(g):\n    '"$core"$'    if hasattr(u, "set_legacy_print_mode"):\n        u.set_legacy_print_mode(113)\n    return 0\n'
        job reader4 "$reader"
    } > "$D/jobs.jsonl"
    same_as_fork
    [ "$(jq -sc 'map(select(.id | startswith("reader")) | .outputs[0][:3]) | unique' "$D/reuse.jsonl")" = '[["float64","int64","0.30000000000000004"]]' ] || { jq -c "[.id,.status,.outputs,.worker_replaced,.error_message]" "$D/reuse.jsonl" "$D/fork.jsonl"; false; }
    [ "$(jq -sc 'map(select(.id | startswith("reader")) | .outputs[0][3]) | unique | length' "$D/reuse.jsonl")" = 1 ]
    [ "$(jq -sc 'map(.worker_replaced) | unique' "$D/reuse.jsonl")" = '[null]' ]
}

@test "python reuse: the prelude's random number generators start every prediction where fork starts it" {
    # Their state is in C: a prediction that draws from one would change
    # what the next one draws.
    printf 'import random\nRNG = random.Random(7)\nNPRNG = np.random.default_rng(7)\nRS = np.random.RandomState(7)\nMT = np.random.Generator(np.random.MT19937(7))\n' >> "$D/prelude.py"
    local draw=$'def transform(g):\n    return [RNG.random(), float(NPRNG.random()), float(RS.random()), float(MT.random())]\n'
    for i in 1 2 3; do job "draw$i" "$draw"; done > "$D/jobs.jsonl"
    run_both
    [ "$(jq -sc 'map(.outputs) | unique | length' "$D/fork.jsonl")" -eq 1 ]
    [ "$(jq -sc 'map([.id, .status, .outputs])' "$D/reuse.jsonl")" = "$(jq -sc 'map([.id, .status, .outputs])' "$D/fork.jsonl")" ]
    [ "$(jq -s 'map(select(.worker_replaced)) | length' "$D/reuse.jsonl")" -eq 0 ]
}

@test "python reuse: codec search functions and copyreg's tables are put back; an ABC registration replaces the process" {
    # The codec registry is a list in C; copyreg's tables are dicts of the
    # standard library; an ABC's registry is in C too. Each pair: a
    # registration, then a prediction that would see it.
    printf 'class Grid:\n    pass\n' >> "$D/prelude.py"
    {
        job codec $'import codecs\ndef transform(g):\n    codecs.register(lambda n: codecs.lookup("utf-8") if n == "myenc" else None)\n    return "a".encode("myenc").decode()\n'
        job codec-after $'def transform(g):\n    try:\n        return "a".encode("myenc").decode()\n    except LookupError:\n        return "no such codec"\n'
        job copyreg $'import copyreg\ndef transform(g):\n    copyreg.pickle(complex, lambda c: (complex, (0, 0)))\n    copyreg.dispatch_table[range] = lambda r: (range, (0,))\n    return 0\n'
        job copyreg-after $'import pickle, copy\ndef transform(g):\n    return [str(pickle.loads(pickle.dumps(1 + 2j))), len(copy.deepcopy(range(3)))]\n'
        job abc $'import collections.abc\ndef transform(g):\n    collections.abc.Sequence.register(Grid)\n    return isinstance(Grid(), collections.abc.Sequence)\n'
        job abc-after $'import collections.abc\ndef transform(g):\n    return isinstance(Grid(), collections.abc.Sequence)\n'
    } > "$D/jobs.jsonl"
    same_as_fork
    [ "$(jq -sc 'map(.outputs)' "$D/fork.jsonl")" = '[["a"],["no such codec"],[0],[["(1+2j)",3]],[true],[false]]' ]
    [ "$(jq -sc 'map([.id, .worker_replaced])' "$D/reuse.jsonl")" = \
        '[["codec",null],["codec-after",null],["copyreg",null],["copyreg-after",null],["abc","poisoned: a class was registered with an abstract base class"],["abc-after",null]]' ]
}

@test "python reuse: the codec tables are put back however they were changed: through a fresh copy of _codecs (the interpreter's own functions, not the recording ones), or codecs.unregister" {
    # The copy's register and register_error are the interpreter's own;
    # unregister took out the standard library's search function, so that
    # a search function of the prediction's answered for every encoding.
    local fresh=$'import codecs, importlib.util\nspec = importlib.util.find_spec("_codecs")\nm = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(m)\n'
    {
        job fresh "$fresh"$'def transform(g):\n    m.register(lambda n: codecs.lookup("utf-8") if n == "myenc" else None)\n    m.register_error("myerrors", lambda e: ("?", e.end))\n    return ["a".encode("myenc").decode(), "\\u00e9".encode("ascii", "myerrors").decode()]\n'
        job fresh-after $'import codecs\ndef transform(g):\n    out = []\n    for f in (lambda: "a".encode("myenc"), lambda: codecs.lookup_error("myerrors")):\n        try:\n            f()\n            out.append("found")\n        except LookupError:\n            out.append("none")\n    return out\n'
        job unregister $'import codecs, encodings\ndef transform(g):\n    u = codecs.lookup("utf-8")\n    codecs.unregister(encodings.search_function)\n    codecs.register(lambda n: u if n in ("latin-1", "latin_1") else None)\n    return 0\n'
        job unregister-after $'import codecs\ndef transform(g):\n    return list(codecs.encode("\\u00e9", "latin-1"))\n'
    } > "$D/jobs.jsonl"
    same_as_fork
    [ "$(jq -sc 'map(.outputs[0])' "$D/fork.jsonl")" = '[["a","?"],["none","none"],0,[233]]' ] || { cat "$D/fork.jsonl"; false; }
    [ "$(jq -sc 'map(.worker_replaced)[:3]' "$D/reuse.jsonl")" = '[null,null,null]' ] || { cat "$D/reuse.jsonl"; false; }
}

@test "python reuse: a signal handler installed in C (faulthandler.register in a fresh copy of faulthandler, not the recording one) replaces the process: the next prediction's signal ends it as it ends a fork child" {
    # The copy's register is the interpreter's own; its handler is out of
    # signal.getsignal's sight. The worker reads the process's caught and
    # ignored signals from /proc after every prediction.
    {
        job fh $'import importlib.util, signal\nspec = importlib.util.find_spec("faulthandler")\nm = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(m)\ndef transform(g):\n    m.register(signal.SIGUSR1)\n    return 0\n'
        job fh-after $'import os, signal\ndef transform(g):\n    os.kill(os.getpid(), signal.SIGUSR1)\n    return 0\n'
        job honest $'import signal\ndef transform(g):\n    signal.signal(signal.SIGUSR2, lambda *a: None)\n    return 1\n'
        job honest-after $'def transform(g):\n    return 2\n'
    } > "$D/jobs.jsonl"
    run_both
    [ "$(jq -sc 'map([.id, .status, .signal])' "$D/reuse.jsonl")" = "$(jq -sc 'map([.id, .status, .signal])' "$D/fork.jsonl")" ] ||
        { cat "$D/fork.jsonl" "$D/reuse.jsonl"; false; }
    [ "$(r "$D/fork.jsonl" fh-after '[.status, .signal]')" = '["signal","SIGUSR1"]' ]
    [ "$(jq -sc 'map(.worker_replaced)' "$D/reuse.jsonl")" = \
        "[\"poisoned: SIGUSR1's handler was changed outside Python's signal module\",\"ended: the prediction's process did not survive it\",null,null]" ] ||
        { jq -sc 'map([.id, .worker_replaced])' "$D/reuse.jsonl"; false; }
}

@test "python reuse: streams' own attributes, sys.argv, tracemalloc, socket and numpy switches, the decimal context, error handlers and faulthandler: the next prediction sees what fork gives it" {
    # Each pair: something honest code does to process-wide state, then a
    # prediction that would see it. Under reuse each is put back, or the
    # process is replaced; either way every result equals fork's.
    printf 'import decimal\n' >> "$D/prelude.py"
    {
        job quit $'try:\n    quit()\nexcept SystemExit:\n    pass\ndef transform(g):\n    return 0\n'
        job quit-after $'def transform(g):\n    try:\n        input()\n    except Exception as e:\n        return type(e).__name__\n'
        job silence $'import sys\nsys.stdout.write = lambda s: 0\nsys.stderr.flag = 1\ndef transform(g):\n    return 0\n'
        job silence-after $'import sys\ndef transform(g):\n    print("hi")\n    return hasattr(sys.stderr, "flag")\n'
        job argv $'import sys\nsys.argv.append("--x")\ndef transform(g):\n    return 0\n'
        job argv-after $'import sys\ndef transform(g):\n    return len(sys.argv)\n'
        job switches $'import tracemalloc, socket, threading\ntracemalloc.start()\nsocket.setdefaulttimeout(3)\nthreading.stack_size(1 << 20)\nnp.setbufsize(16384)\nnp.seterrcall(lambda t, f: print("called", t))\ndef transform(g):\n    return 0\n'
        job switches-after $'import tracemalloc, socket, threading\ndef transform(g):\n    return [tracemalloc.is_tracing(), socket.getdefaulttimeout(), threading.stack_size(), np.getbufsize(), np.geterrcall()]\n'
        job decimal $'def transform(g):\n    decimal.getcontext().prec = 4\n    decimal.getcontext().traps[decimal.Inexact] = True\n    return 0\n'
        job decimal-after $'def transform(g):\n    return str(decimal.Decimal(1) / decimal.Decimal(3))\n'
        job handler $'import codecs, faulthandler, signal\ncodecs.register_error("arcq", lambda e: ("?", e.end))\ndef transform(g):\n    return 0\n'
        job handler-after $'def transform(g):\n    try:\n        return b"a\\xff".decode("utf-8", "arcq")\n    except LookupError:\n        return "no such handler"\n'
        job fh $'import faulthandler, signal\nfaulthandler.register(signal.SIGUSR1)\ndef transform(g):\n    return 0\n'
        job fh-after $'import os, signal\ndef transform(g):\n    os.kill(os.getpid(), signal.SIGUSR1)\n    return 0\n'
    } > "$D/jobs.jsonl"
    run_both
    [ "$(jq -sc 'map([.id, .status, .outputs, .stdout, .stderr, .signal])' "$D/reuse.jsonl")" = \
        "$(jq -sc 'map([.id, .status, .outputs, .stdout, .stderr, .signal])' "$D/fork.jsonl")" ] ||
        { cat "$D/fork.jsonl" "$D/reuse.jsonl"; false; }
    [ "$(r "$D/fork.jsonl" quit-after .outputs)" = '["EOFError"]' ]
    [ "$(r "$D/fork.jsonl" silence-after '[.outputs, .stdout]')" = '[[false],"hi\n"]' ]
    [ "$(r "$D/fork.jsonl" switches-after .outputs)" = '[[false,null,0,8192,null]]' ]
    [ "$(r "$D/fork.jsonl" decimal-after .outputs)" = '["0.3333333333333333333333333333"]' ]
    [ "$(r "$D/fork.jsonl" handler-after .outputs)" = '["no such handler"]' ]
    [ "$(r "$D/fork.jsonl" fh-after '[.status, .signal]')" = '["signal","SIGUSR1"]' ]
    [ "$(jq -sc 'map(select(.worker_replaced) | [.id, .worker_replaced])' "$D/reuse.jsonl")" = \
        '[["quit","poisoned: sys.stdin was closed"],["argv","poisoned: sys.argv was changed"],["fh","poisoned: faulthandler.register was called"],["fh-after","ended: the prediction'"'"'s process did not survive it"]]' ] ||
        { jq -sc 'map([.id, .worker_replaced])' "$D/reuse.jsonl"; false; }
}

@test "python reuse: functions' attributes (a library class's methods' too), a singledispatch registration, logging, stdlib and numpy tables, an lru_cache's values (one the prelude filled, too), numpy 1's operators and printers, an array's flags: the next prediction sees what fork gives it" {
    # Each pair: something honest code leaves on state the prelude's
    # modules share, then a prediction that would see it. Under reuse each
    # is put back, or the process is replaced; either way every result
    # equals fork's.
    printf '%s\n' 'import logging, functools, typing, copy, shutil, encodings.aliases' 'def objects(g):' '    return len(g)' \
        'def scale(x, *, k=1):' '    return x * k' '@functools.singledispatch' 'def show(x):' '    return "any"' \
        '@functools.lru_cache(maxsize=None)' 'def palette():' '    return [1, 2]' 'def cells(g):' '    return 0' \
        '@functools.lru_cache(maxsize=None)' 'def warm():' '    return [1, 2, 3]' 'warm()' \
        'cells.seen = {}' 'H = logging.NullHandler()' 'H.setFormatter(logging.Formatter("%(message)s"))' \
        'logging.getLogger("arcfmt").addHandler(H)' >> "$D/prelude.py"
    {
        job memo $'def transform(g):\n    objects.memo = {}\n    return 0\n'
        job memo-after $'def transform(g):\n    return hasattr(objects, "memo")\n'
        job pad $'def transform(g):\n    np.pad.cache = {}\n    return 0\n'
        job pad-after $'def transform(g):\n    return hasattr(np.pad, "cache")\n'
        job method $'def transform(g):\n    collections.Counter.most_common.seen = 1\n    return 0\n'
        job method-after $'def transform(g):\n    return hasattr(collections.Counter.most_common, "seen")\n'
        job kwmethod $'def transform(g):\n    json.JSONEncoder.__init__.__kwdefaults__["indent"] = 3\n    return 0\n'
        job kwmethod-after $'def transform(g):\n    return json.JSONEncoder().indent\n'
        job seen $'def transform(g):\n    cells.seen[1] = 2\n    return 0\n'
        job seen-after $'def transform(g):\n    return len(cells.seen)\n'
        job doc $'def transform(g):\n    scale.__doc__ = "x"\n    return 0\n'
        job doc-after $'def transform(g):\n    return scale.__doc__\n'
        job kwdefaults $'def transform(g):\n    scale.__kwdefaults__["k"] = 5\n    return 0\n'
        job kwdefaults-after $'def transform(g):\n    return scale(2)\n'
        job annotations $'def transform(g):\n    scale.__annotations__["x"] = int\n    return 0\n'
        job annotations-after $'def transform(g):\n    return len(scale.__annotations__)\n'
        job dispatch $'def transform(g):\n    show.register(int, lambda x: "int")\n    return show(1)\n'
        job dispatch-after $'def transform(g):\n    return show(1)\n'
        job logging $'def transform(g):\n    logging.basicConfig()\n    logging.getLogger("arc").setLevel(logging.ERROR)\n    logging.disable(logging.WARNING)\n    logging.addLevelName(25, "NOTE")\n    return 0\n'
        job logging-after $'def transform(g):\n    return [len(logging.root.handlers), logging.getLogger("arc").level, logging.root.manager.disable, logging.getLevelName(25)]\n'
        job format $'def transform(g):\n    H.formatter._style._fmt = "X%(message)s"\n    return 0\n'
        job format-after $'def transform(g):\n    return H.format(logging.makeLogRecord({"msg": "m"}))\n'
        job alias $'def transform(g):\n    encodings.aliases.aliases["arcenc"] = "utf_8"\n    return "a".encode("arcenc").decode()\n'
        job alias-after $'def transform(g):\n    try:\n        return "a".encode("arcenc").decode()\n    except LookupError:\n        return "none"\n'
        job tables $'def transform(g):\n    shutil.register_archive_format("arcfmt", lambda *a, **k: None)\n    copy._deepcopy_dispatch[list] = lambda x, memo: "L"\n    return 0\n'
        job tables-after $'def transform(g):\n    return [len(shutil.get_archive_formats()), copy.deepcopy([1])]\n'
        job numpy $'def transform(g):\n    np.sctypeDict["arcint"] = np.int8\n    np.typecodes["All"] = "b"\n    np.ma.core.default_filler["i"] = 7\n    return 0\n'
        job numpy-after $'def transform(g):\n    try:\n        name = str(np.dtype("arcint"))\n    except TypeError:\n        name = "none"\n    return [name, np.typecodes["All"][:3], int(np.ma.default_fill_value(np.int64(1)))]\n'
        job cached $'def transform(g):\n    palette().append(9)\n    return 0\n'
        job cached-after $'def transform(g):\n    return palette()\n'
        job warmed $'def transform(g):\n    warm().append(9)\n    return 0\n'
        job warmed-after $'def transform(g):\n    return [warm(), warm.cache_info().hits]\n'
        job ops $'def transform(g):\n    if hasattr(np, "set_numeric_ops"):\n        np.set_numeric_ops(add=np.subtract)\n    return 0\n'
        job ops-after $'def transform(g):\n    return int((np.array([2]) + np.array([1]))[0])\n'
        job printer $'def transform(g):\n    if hasattr(np, "set_string_function"):\n        np.set_string_function(lambda a: "X")\n        np.set_string_function(lambda a: "Y", repr=False)\n    return 0\n'
        job printer-after $'def transform(g):\n    return [repr(np.array([1])), str(np.array([1]))]\n'
        job flags $'def transform(g):\n    ARR.flags.writeable = False\n    return 0\n'
        job flags-after $'def transform(g):\n    return ARR.flags.writeable\n'
    } > "$D/jobs.jsonl"
    same_as_fork
    [ "$(jq -sc 'map(select(.id | endswith("-after")) | .outputs[0])' "$D/fork.jsonl")" = \
        '[false,false,false,null,0,null,2,0,"any",[0,0,0,"Level 25"],"m","none",[5,[1]],["none","?bh",999999],[1,2],[[1,2,3],1],3,["array([1])","[1]"],true]' ]
    [ "$(jq -sc 'map(select(.worker_replaced) | [.id, .worker_replaced])' "$D/reuse.jsonl")" = \
        '[["memo","poisoned: function fitrun_prelude.objects was changed (memo added)"],["pad","poisoned: function numpy.lib.arraypad.pad was changed (cache added)"],["method","poisoned: function collections.Counter.most_common was changed (seen added)"],["kwmethod","poisoned: dict json.encoder.JSONEncoder.__init__.__kwdefaults__ was changed (indent replaced)"],["seen","poisoned: fitrun_prelude.cells.seen was changed in place"],["doc","poisoned: function fitrun_prelude.scale'"'"'s __doc__ was assigned"],["kwdefaults","poisoned: dict fitrun_prelude.scale.__kwdefaults__ was changed (k replaced)"],["annotations","poisoned: dict fitrun_prelude.scale.__annotations__ was changed (x added)"],["dispatch","poisoned: dict fitrun_prelude.show.registry was changed (<class '"'int'"'> added)"],["warmed","poisoned: fitrun_prelude.warm, a cache the prelude filled, was called"],["warmed-after","poisoned: fitrun_prelude.warm, a cache the prelude filled, was called"],["flags","poisoned: fitrun_prelude.ARR was changed in place"]]' ] ||
        { jq -sc 'map([.id, .worker_replaced])' "$D/reuse.jsonl"; false; }
}

@test "python reuse: os.putenv, which os.environ does not show, trips the tripwire" {
    # The C environment is what time.tzset() and every C library read.
    {
        job putenv $'import os\ndef transform(g):\n    os.putenv("TZ", "XXX+05")\n    return 0\n'
        job tz $'import time\ndef transform(g):\n    time.tzset()\n    return time.localtime(0).tm_hour\n'
    } > "$D/jobs.jsonl"
    run_both
    [ "$(jq -sc 'map([.id, .outputs])' "$D/fork.jsonl")" = '[["putenv",[0]],["tz",[0]]]' ]
    [ "$(jq -sc 'map([.id, .outputs])' "$D/reuse.jsonl")" = '[["putenv",[0]],["tz",[0]]]' ]
    [ "$(r "$D/reuse.jsonl" putenv .worker_replaced)" = '"poisoned: it used os.putenv"' ]
}

@test "python reuse: a poisoned process's \"done\" counts even when it has exited before its worker reads it" {
    # The tripwire's message, "done" and the exit come in a burst: the
    # worker reads everything queued before it takes the exit for the
    # job's end (it said "ended" for about 1 in 6 of these).
    local i
    for i in $(seq 30); do
        job "env$i" $'import os\nos.environ["POISON"] = "1"\ndef transform(g):\n    return g\n'
    done > "$D/jobs.jsonl"
    run_with "$D/p.ini" "$D/reuse.jsonl"
    [ "$status" -eq 0 ]
    [ "$(jq -sc 'map([.status, .worker_replaced]) | unique' "$D/reuse.jsonl")" = '[["ok","poisoned: os.environ was changed"]]' ]
}

@test "python reuse: the process's socket to its worker cannot be used to forge or steal a job" {
    # A forged "done" (no nonce) does not end the job: it ends when the
    # real one comes, and the process is replaced after it.
    # Reading the next job from the socket: nothing comes while this one
    # runs, so it ends at its wall time.
    {
        job forge $'import os\ndef transform(g):\n    os.write(6, b"D" + bytes(16))\n    return g\n'
        honest after-forge
        job steal $'import socket\ndef transform(g):\n    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, fileno=6)\n    msg, fds, _, _ = socket.recv_fds(s, 64, 4)\n    return [len(fds)]\n'
        honest after-steal
        job closechan $'import os\ndef transform(g):\n    os.close(6)\n    return g\n'
        honest after-close
        job swapchan $'import os, gc\ndef transform(g):\n    os.dup2(0, 6)\n    try:\n        gc.get_objects()\n    except RuntimeError as e:\n        print("refused")\n    return g\n'
        honest after-swap
    } > "$D/jobs.jsonl"
    run_with "$D/p.ini" "$D/reuse.jsonl" --wall-time 2s
    [ "$status" -eq 0 ]
    run_with "$D/fork.ini" "$D/fork.jsonl"
    for id in after-forge after-steal after-close after-swap; do
        [ "$(r "$D/reuse.jsonl" $id '[.status, .outputs]')" = "$(r "$D/fork.jsonl" $id '[.status, .outputs]')" ]
    done
    [ "$(r "$D/reuse.jsonl" forge '[.status, .worker_replaced]')" = '["ok","poisoned: a message on its socket that is not its own protocol'"'"'s"]' ]
    [ "$(r "$D/reuse.jsonl" steal '[.status, .timeout]')" = '["timeout","wall"]' ]
    # A process that closed its socket cannot answer: it exits after the
    # prediction (status 70, no result of its own), and is replaced.
    [ "$(r "$D/reuse.jsonl" closechan '[.status, .error_type, .worker_replaced]')" = '["crash","NoResult","ended: the prediction'"'"'s process did not survive it"]' ]
    # Its socket is no longer the one the tripwire knows: the gc call is
    # refused rather than left unreported. Its "done" goes to /dev/null
    # (what fd 0 was), the next read there is an end of file, and the
    # process exits 0 after its report, as a fork child does: replaced.
    [ "$(r "$D/reuse.jsonl" swapchan .stdout)" = '"refused\n"' ]
    [ "$(r "$D/reuse.jsonl" swapchan '[.status, .worker_replaced]')" = '["ok","ended: the prediction'"'"'s process did not survive it"]' ]
}

@test "python reuse: a prediction that does not end ok or error ends its process; the next one runs fresh" {
    {
        job cpu $'def transform(g):\n    while True:\n        pass\n'
        honest after-cpu
        job violation $'import socket\ndef transform(g):\n    socket.socket()\n'
        honest after-violation
        job exit $'import os\ndef transform(g):\n    os._exit(0)\n'
        honest after-exit
    } > "$D/jobs.jsonl"
    run_with "$D/p.ini" "$D/reuse.jsonl" --wall-time 60s
    [ "$status" -eq 0 ]
    # Memory as RLIMIT_AS limits it (no cgroups): MemoryError inside the
    # process, which then is replaced. 300M, not the profile's 1G, and a
    # run of its own with a CPU budget far above what filling it costs
    # where page faults are slow (15-20 µs each on a paravirtualised
    # guest: about 1 s of CPU).
    {
        job memory $'def transform(g):\n    x = []\n    while True:\n        x.append(bytearray(50 << 20))\n'
        honest after-memory
    } > "$D/jobs.jsonl"
    run_with "$D/p.ini" "$D/memory.jsonl" --cpu-time 30s --wall-time 60s --set resources.cgroups=off \
        --set sandbox.memory=300M
    [ "$status" -eq 0 ]
    cat "$D/memory.jsonl" >> "$D/reuse.jsonl"
    [ "$(r "$D/reuse.jsonl" cpu '[.status, .timeout, .worker_replaced]')" = '["timeout","cpu","ended: the prediction'"'"'s process did not survive it"]' ]
    [ "$(r "$D/reuse.jsonl" violation '[.status, .syscall]')" = '["violation","socket"]' ]
    [[ "$(r "$D/reuse.jsonl" violation .worker_replaced)" =~ ^\"ended ]]
    [ "$(r "$D/reuse.jsonl" memory '[.status, .error_type, .worker_replaced]')" = '["memory","MemoryError","memory_error: the prediction ran out of memory"]' ]
    [ "$(r "$D/reuse.jsonl" exit '[.status, .error_type]')" = '["crash","NoResult"]' ]
    for id in after-cpu after-violation after-memory after-exit; do
        [ "$(r "$D/reuse.jsonl" $id '[.status, .worker_replaced]')" = '["ok",null]' ]
        # Its CPU time is its own, not the process's earlier predictions'.
        [ "$(r "$D/reuse.jsonl" $id '.cpu_ms < 500')" = true ]
    done
}

@test "python reuse: under its slot's memory cgroup an OOM kill is the prediction's; the process is kept between jobs, then replaced" {
    # The reused process stays in its slot's cgroup for all its jobs: the
    # pool must not kill it after a job, and the OOM killer's kill is the
    # prediction's.
    [ "$(id -u)" = 0 ] || skip "needs root to create cgroups"
    "$FITRUN" detect --json > "$D/detect.json"
    [ "$(jq -r .cgroup.delegated "$D/detect.json")" = true ] || skip "cgroups not delegated"
    local pid=$'import os\ndef transform(g):\n    return os.getpid()\n'
    {
        job p1 "$pid"
        job p2 "$pid"
        job memory $'def transform(g):\n    x = []\n    while True:\n        x.append(bytearray(50 << 20))\n'
        job p3 "$pid"
        job p4 "$pid"
    } > "$D/jobs.jsonl"
    # A CPU budget far above what filling 300M costs where page faults are
    # slow (15-20 µs each on a paravirtualised guest: over 1 s of CPU).
    run_with "$D/p.ini" "$D/reuse.jsonl" --cpu-time 30s --wall-time 60s --workers 1 --memory 300M \
        --set resources.cgroups=require
    [ "$status" -eq 0 ]
    [ "$(r "$D/reuse.jsonl" memory '[.status, .error_type]')" = '["memory","OOMKill"]' ]
    [[ "$(r "$D/reuse.jsonl" memory .worker_replaced)" =~ ^\"ended ]]
    for id in p1 p2 p3 p4; do
        [ "$(r "$D/reuse.jsonl" $id '[.status, .worker_replaced]')" = '["ok",null]' ]
    done
    [ "$(r "$D/reuse.jsonl" p1 .outputs)" = "$(r "$D/reuse.jsonl" p2 .outputs)" ]
    [ "$(r "$D/reuse.jsonl" p3 .outputs)" = "$(r "$D/reuse.jsonl" p4 .outputs)" ]
    [ "$(r "$D/reuse.jsonl" p2 .outputs)" != "$(r "$D/reuse.jsonl" p3 .outputs)" ]
}

@test "python reuse: each prediction gets its whole CPU budget, however many ran before it in the process" {
    # 12 predictions of ~150 ms each: 1.8 s in one process, above the 1 s
    # budget; each is its own and all are ok.
    for i in $(seq 1 12); do
        job "b$i" $'import time\ndef transform(g):\n    t = time.process_time()\n    while time.process_time() - t < 0.15:\n        pass\n    return g\n'
    done > "$D/jobs.jsonl"
    run_with "$D/p.ini" "$D/reuse.jsonl" --wall-time 60s
    [ "$status" -eq 0 ]
    [ "$(jq -s 'map(select(.status == "ok" and .cpu_ms >= 140 and .cpu_ms < 900 and .worker_replaced == null)) | length' "$D/reuse.jsonl")" -eq 12 ]
}

@test "python reuse: max_predictions and max_memory replace the process, saying so" {
    profile "$D/max.ini" "isolation = reuse" "max_predictions = 3"
    {
        for i in 1 2 3 4 5 6 7; do job "p$i" $'import os\ndef transform(g):\n    print(os.getpid())\n    return g\n'; done
    } > "$D/jobs.jsonl"
    run_with "$D/max.ini" "$D/out.jsonl"
    [ "$status" -eq 0 ]
    [ "$(jq -sc 'map(.worker_replaced)' "$D/out.jsonl")" = '[null,null,"max_predictions: 3 predictions run",null,null,"max_predictions: 3 predictions run",null]' ]
    [ "$(jq -s 'map(.stdout) | unique | length' "$D/out.jsonl")" -eq 3 ]
    [ "$(r "$D/out.jsonl" p1 .stdout)" = "$(r "$D/out.jsonl" p3 .stdout)" ]
    [ "$(r "$D/out.jsonl" p3 .stdout)" != "$(r "$D/out.jsonl" p4 .stdout)" ]

    # The resident size is read after each prediction: with max_memory
    # below the interpreter's own size, every prediction's process goes.
    profile "$D/mem.ini" "isolation = reuse" "max_memory = 1M"
    {
        job m1 $'def transform(g):\n    return g\n'
        job m2 $'def transform(g):\n    return g\n'
    } > "$D/jobs.jsonl"
    run_with "$D/mem.ini" "$D/out.jsonl"
    [ "$status" -eq 0 ]
    [[ "$(r "$D/out.jsonl" m1 .worker_replaced)" =~ ^\"memory:\ [0-9]+\ MiB\ resident,\ above\ 1\ MiB\"$ ]]
    [[ "$(r "$D/out.jsonl" m2 .worker_replaced)" =~ ^\"memory: ]]
    [ "$(jq -s 'map(.status) | unique' -c "$D/out.jsonl")" = '["ok"]' ]
}

@test "python reuse: the profile keys are checked, and reuse refuses a sandbox that allows processes" {
    profile "$D/bad.ini" "isolation = share"
    run_with "$D/bad.ini" "$D/out.jsonl"
    [ "$status" -ne 0 ]
    [[ "$stderr" == *"bad value 'share' for isolation (fork or reuse)"* ]]
    profile "$D/bad.ini" "isolation = reuse" "max_predictions = 0"
    run_with "$D/bad.ini" "$D/out.jsonl"
    [ "$status" -ne 0 ]
    [[ "$stderr" == *"bad value '0' for max_predictions"* ]]
    profile "$D/bad.ini" "isolation = reuse" "max_memory = 10"
    run_with "$D/bad.ini" "$D/out.jsonl"
    [ "$status" -ne 0 ]
    [[ "$stderr" == *"for max_memory"* ]]
    job a $'def transform(g):\n    return g\n' > "$D/jobs.jsonl"
    sed -i 's/^preset = python$/preset = python\nallow = clone, clone3/' "$D/p.ini"
    run_with "$D/p.ini" "$D/out.jsonl"
    [ "$status" -ne 0 ]
    [[ "$stderr" == *"isolation = reuse cannot be combined with [sandbox] allow = clone"* ]]
}

@test "python reuse: a prediction that leaves the process's socket non-blocking does not end its process between two jobs" {
    {
        for i in $(seq 20); do
            job "nb$i" $'import os\ndef transform(g):\n    os.set_blocking(6, False)\n    print(os.getpid())\n    return g\n'
            job "h$i" $'import os\ndef transform(g):\n    print(os.getpid())\n    return g\n'
        done
    } > "$D/jobs.jsonl"
    run_with "$D/p.ini" "$D/out.jsonl"
    [ "$status" -eq 0 ]
    # The wait for the next job would fail (EAGAIN), the process exit, and
    # the next job find it dead (a crash charged to that job, or its worker
    # taken down): the flags are cleared instead, and the process runs on.
    [[ "$stderr" != *crash* ]] || { echo "$stderr"; false; }
    [ "$(jq -sc 'map([.status, .attempts, .worker_replaced]) | unique' "$D/out.jsonl")" = '[["ok",null,null]]' ] || { cat "$D/out.jsonl"; false; }
    [ "$(jq -s 'map(.stdout) | unique | length' "$D/out.jsonl")" -eq 1 ]
}

@test "python reuse: gc.freeze() or gc.unfreeze() in a prediction has its process replaced" {
    {
        job freeze $'import gc\ngc.disable()\nx = []\nx.append(x)\ngc.freeze()\ngc.enable()\ndef transform(g):\n    return g\n'
        job after $'import gc\ndef transform(g):\n    return g\n'
        job unfreeze $'import gc\ngc.unfreeze()\ndef transform(g):\n    return g\n'
        job after2 $'def transform(g):\n    return g\n'
    } > "$D/jobs.jsonl"
    run_with "$D/p.ini" "$D/out.jsonl"
    [ "$status" -eq 0 ]
    # Frozen garbage would stay for the process's life (memory the later
    # predictions lack); unfrozen, the prelude's heap is collected again.
    [ "$(jq -sc 'map([.id, .status, .worker_replaced])' "$D/out.jsonl")" = '[["freeze","ok","poisoned: gc.freeze() or gc.unfreeze() was called"],["after","ok",null],["unfreeze","ok","poisoned: gc.freeze() or gc.unfreeze() was called"],["after2","ok",null]]' ] || { cat "$D/out.jsonl"; false; }
}

@test "python reuse: fields a library's function keeps outside any dict (its name, qualname, doc, module, annotations; a builtin's module), its annotations' contents, the streams' C fields, numpy's global bit generator, a ctypes function's types and a defaultdict's factory: the next prediction sees what fork gives it" {
    {
        job name $'import json\njson.dumps.__name__ = "P1"\ndef transform(g):\n    return g\n'
        job name-after $'import json\ndef transform(g):\n    return [json.dumps.__name__]\n'
        job qualname $'import collections\ncollections.Counter.most_common.__qualname__ = "P2"\ndef transform(g):\n    return g\n'
        job qualname-after $'import collections\ndef transform(g):\n    return [collections.Counter.most_common.__qualname__]\n'
        job module $'np.rot90.__module__ = "P3"\ndef transform(g):\n    return g\n'
        job module-after $'def transform(g):\n    return [np.rot90.__module__]\n'
        job builtin $'import math\nmath.floor.__module__ = "P4"\ndef transform(g):\n    return g\n'
        job builtin-after $'import math\ndef transform(g):\n    return [math.floor.__module__]\n'
        job annotations $'import json\njson.dumps.__annotations__["obj"] = int\ndef transform(g):\n    return g\n'
        job annotations-after $'import json\ndef transform(g):\n    return [len(json.dumps.__annotations__)]\n'
        job chunk $'import sys\nsys.stdout._CHUNK_SIZE = 1\ndef transform(g):\n    return g\n'
        job chunk-after $'import sys\ndef transform(g):\n    return [sys.stdout._CHUNK_SIZE]\n'
        # Another bit generator there is what seed() seeds and set_state
        # restores; draws would go on from the first one's state.
        job bitgen $'np.random.mtrand._rand._bit_generator = np.random.MT19937(5)\nnp.random.random(100)\ndef transform(g):\n    return g\n'
        job bitgen-after $'def transform(g):\n    np.random.seed(0)\n    return [int(np.random.randint(0, 10**6))]\n'
        job ctypes $'import ctypes\nctypes.memmove.restype = ctypes.c_int\ndef transform(g):\n    return g\n'
        job ctypes-after $'import ctypes\ndef transform(g):\n    return [ctypes.memmove.restype.__name__]\n'
        job factory $'import typing\ntyping._overload_registry.default_factory = lambda: "P5"\ndef transform(g):\n    return g\n'
        job factory-after $'import typing\ndef transform(g):\n    return [repr(typing._overload_registry.default_factory)[:20]]\n'
    } > "$D/jobs.jsonl"
    same_as_fork
    [ "$(jq -sc 'map(select(.id | endswith("-after")) | .outputs[0][0])' "$D/fork.jsonl")" = '["dumps","Counter.most_common","numpy","math",0,8192,985772,"c_void_p","functools.partial(<c"]' ]
    [ "$(jq -sc 'map(select(.id | endswith("-after") | not) | .worker_replaced)' "$D/reuse.jsonl")" = \
        '["poisoned: function json.dumps'"'"'s __name__ was assigned","poisoned: function collections.Counter.most_common'"'"'s __qualname__ was assigned","poisoned: function numpy.lib.function_base.rot90'"'"'s __module__ was assigned","poisoned: builtin math.floor'"'"'s __module__ was assigned",null,"poisoned: sys.stdout was reconfigured","poisoned: numpy'"'"'s global RandomState was given another bit generator","poisoned: a foreign function (ctypes) the interpreter'"'"'s objects hold was given other types",null]' ] ||
        { jq -sc 'map([.id, .worker_replaced])' "$D/reuse.jsonl"; false; }
}

@test "python reuse: what a library keeps in C fields that __init__ or a closure's cell can change in place (a staticmethod's, classmethod's or property's function, numpy's implementations behind its public functions and their defaults, a struct.Struct's format, the runtime's own, singledispatch's cache, numpy's repr guard): the next prediction sees what fork gives it" {
    # Each poisoner writes no dict and makes no audited call: it calls
    # __init__ again on an object a class holds, or assigns a cell that a
    # numpy function closes over, or changes the defaults of the function
    # in that cell. Each reader is honest code that goes through it.
    # A CPU budget of its own: filling numpy's repr guard with 600,000
    # ids takes 0.56 s of CPU under fork where a page fault costs 15 µs,
    # and went past 1 s under reuse there.
    sed -i 's/^cpu_time = 1s$/cpu_time = 10s/' "$D/p.ini" "$D/fork.ini"
    grep -q '^cpu_time = 10s$' "$D/p.ini"
    grep -q '^cpu_time = 10s$' "$D/fork.ini"
    printf 'import struct\nHEADER = struct.Struct("<i")\nimport functools\n@functools.singledispatch\ndef show(x):\n    return "base"\n@show.register\ndef _(x: int):\n    return "int"\n' >> "$D/prelude.py"
    local base=$'import numpy.polynomial as P\nB = P._polybase.ABCPolyBase\n'
    {
        job sm $'def transform(g):\n    np.lib.index_tricks.AxisConcatenator.__dict__["concatenate"].__init__(lambda *a, **k: np.zeros(1))\n    return 0\n'
        job sm-after $'def transform(g):\n    return np.r_[[1], [2]].tolist()\n'
        job cm "$base"$'def transform(g):\n    B.__dict__["fromroots"].__init__(lambda cls, *a, **k: "P")\n    return 0\n'
        job cm-after $'import numpy.polynomial as P\ndef transform(g):\n    return P.Polynomial.fromroots([1]).coef.tolist()\n'
        job property "$base"$'def transform(g):\n    B.__dict__["symbol"].__init__(lambda s: "P")\n    return 0\n'
        job property-after $'import numpy.polynomial as P\ndef transform(g):\n    return P.Polynomial([1, 2]).symbol\n'
        job cell $'def transform(g):\n    cell = np.pad.__closure__[np.pad.__code__.co_freevars.index("implementation")]\n    cell.cell_contents = lambda *a, **k: np.zeros((1, 1), int)\n    return 0\n'
        job cell-after $'def transform(g):\n    return np.pad(np.ones((1, 1), int), 1).tolist()\n'
        job inner $'def transform(g):\n    inner = np.unique.__closure__[np.unique.__code__.co_freevars.index("implementation")].cell_contents\n    if inner.__kwdefaults__:\n        inner.__kwdefaults__["equal_nan"] = False\n    return 0\n'
        job inner-after $'def transform(g):\n    return int(np.unique(np.array([float("nan")] * 3)).size)\n'
        job struct $'def transform(g):\n    HEADER.__init__("<h")\n    return 0\n'
        job struct-after $'def transform(g):\n    return list(HEADER.pack(5))\n'
        job frame $'import sys\ndef transform(g):\n    sys.modules["__main__"].JOB_FRAME.__init__("=H")\n    return 0\n'
        job frame-after $'def transform(g):\n    return 1\n'
        # singledispatch's cache of what each type dispatches to, a dict
        # in a WeakKeyDictionary its dispatch function closes over.
        job dispatch $'def transform(g):\n    free = show.dispatch.__code__.co_freevars\n    show.dispatch.__closure__[free.index("dispatch_cache")].cell_contents[int] = lambda x: "P"\n    return show(1)\n'
        job dispatch-after $'def transform(g):\n    return [show(1), show(1.5)]\n'
        # numpy's guard against recursive reprs, a set its printer closes
        # over, filled with the ids a later array is likely to have.
        job guard $'import _thread\ndef transform(g):\n    f = np.core.arrayprint._array2string\n    s = f.__closure__[f.__code__.co_freevars.index("repr_running")].cell_contents\n    base, t = id(np.array([1, 2])), _thread.get_ident()\n    s.update((base + 16 * k, t) for k in range(-300000, 300000))\n    return 0\n'
        job guard-after $'def transform(g):\n    return str(np.array([1, 2]))\n'
    } > "$D/jobs.jsonl"
    same_as_fork
    [ "$(jq -sc 'map(select(.id | endswith("-after")) | [.id, .outputs[0]])' "$D/fork.jsonl")" = \
        '[["sm-after",[1,2]],["cm-after",[-1,1]],["property-after","x"],["cell-after",[[0,0,0],[0,1,0],[0,0,0]]],["inner-after",1],["struct-after",[5,0,0,0]],["frame-after",1],["dispatch-after",["int","base"]],["guard-after","[1 2]"]]' ] ||
        { jq -c '[.id, .outputs]' "$D/fork.jsonl"; false; }
    [ "$(jq -sc 'map(select(.id | endswith("-after") | not) | .worker_replaced)' "$D/reuse.jsonl")" = \
        '["poisoned: numpy.lib.index_tricks.AxisConcatenator.concatenate'"'"'s function was changed","poisoned: numpy.polynomial._polybase.ABCPolyBase.fromroots'"'"'s function was changed","poisoned: numpy.polynomial._polybase.ABCPolyBase.symbol'"'"'s fget was changed","poisoned: numpy.lib.arraypad.pad'"'"'s variable implementation was assigned","poisoned: dict numpy.lib.arraysetops.unique'"'"'s variable implementation.__kwdefaults__ was changed (equal_nan replaced)","poisoned: fitrun_prelude.HEADER was given another format","poisoned: __main__.JOB_FRAME was given another format",null,null]' ] ||
        { jq -sc 'map([.id, .worker_replaced])' "$D/reuse.jsonl"; false; }
}

@test "python reuse: a lock a library's object holds (numpy's global generator's, threading's), or the import lock, left held, or a library's counter advanced, has its process replaced: the next prediction does not wait for it, and counts as a fork child does" {
    # Every draw from numpy's global RandomState takes its bit generator's
    # lock, a public attribute: left held, the next honest prediction (its
    # np.random.random()) would wait until its wall time.
    poison_jobs rnglock $'np.random.mtrand._rand._bit_generator.lock.acquire()\ndef transform(g):\n    return g\n'
    check_poison rnglock "^\"poisoned: a lock the interpreter's objects hold was left acquired, or released\"$"
    poison_jobs threadlock $'import threading\nthreading._active_limbo_lock.acquire()\ndef transform(g):\n    return g\n'
    check_poison threadlock "^\"poisoned: a lock the interpreter's objects hold was left acquired, or released\"$"
    poison_jobs implock $'import _imp\n_imp.acquire_lock()\ndef transform(g):\n    return g\n'
    check_poison implock '^"poisoned: _imp.lock_held\(\) changed"$'
    # A counter in C: threading names its threads from one. Honest code
    # that advances it costs its process.
    {
        job thread1 $'import threading\ndef transform(g):\n    return [threading.Thread().name]\n'
        job thread2 $'import threading\ndef transform(g):\n    return [threading.Thread().name]\n'
    } > "$D/jobs.jsonl"
    fork_and_reuse '[["thread1","ok",[["Thread-1"]],null],["thread2","ok",[["Thread-1"]],null]]' \
        '[["thread1","ok",[["Thread-1"]],"poisoned: a counter (itertools.count) the interpreter'"'"'s objects hold was advanced"],["thread2","ok",[["Thread-1"]],"poisoned: a counter (itertools.count) the interpreter'"'"'s objects hold was advanced"]]'
}

@test "python reuse: state the prelude's own objects keep outside any module's dict (an array, a StringIO, a BytesIO, a count, a lock, an RLock, slots, objects inside containers, a SimpleNamespace): the next prediction sees what fork gives it" {
    printf '%s\n' 'import array, io, itertools, threading' 'COUNTER = itertools.count()' 'BUF = io.StringIO()' \
        'ARRAY = array.array("i", [1, 2, 3])' 'BIN = io.BytesIO(b"ab")' 'LOCK = threading.Lock()' 'RLOCK = threading.RLock()' \
        'class Point:' '    __slots__ = ("x", "__y")' '    def __init__(self):' '        self.x = 1' 'P = Point()' \
        'class Node:' '    def __init__(self):' '        self.x = 1' 'REG = {"a": Node(), "l": [Node()], "t": (ARRAY, [Point()])}' \
        'import types' 'NS = types.SimpleNamespace(a=1)' >> "$D/prelude.py"
    {
        job count $'def transform(g):\n    return next(COUNTER)\n'
        job count-after $'def transform(g):\n    return next(COUNTER)\n'
        job buf $'def transform(g):\n    BUF.write("secret")\n    return 0\n'
        job buf-after $'def transform(g):\n    return BUF.getvalue()\n'
        job arr $'def transform(g):\n    ARRAY[0] = 99\n    return 0\n'
        job arr-after $'def transform(g):\n    return ARRAY[0]\n'
        job bin $'def transform(g):\n    BIN.seek(1)\n    return 0\n'
        job bin-after $'def transform(g):\n    return BIN.read().decode()\n'
        job lock $'def transform(g):\n    LOCK.acquire()\n    return 0\n'
        job lock-after $'def transform(g):\n    return LOCK.acquire(timeout=0.1)\n'
        job rlock $'def transform(g):\n    RLOCK.acquire()\n    return 0\n'
        job rlock-after $'def transform(g):\n    return RLOCK._is_owned()\n'
        job slots $'def transform(g):\n    P._Point__y = 2\n    return 0\n'
        job slots-after $'def transform(g):\n    return hasattr(P, "_Point__y")\n'
        job nested $'def transform(g):\n    REG["a"].x = 5\n    return 0\n'
        job nested-after $'def transform(g):\n    return REG["a"].x\n'
        job nested-list $'def transform(g):\n    REG["l"].append(1)\n    return 0\n'
        job nested-list-after $'def transform(g):\n    return len(REG["l"])\n'
        job nested-slot $'def transform(g):\n    REG["t"][1][0].x = 7\n    return 0\n'
        job nested-slot-after $'def transform(g):\n    return REG["t"][1][0].x\n'
        job ns $'def transform(g):\n    NS.a = 5\n    return 0\n'
        job ns-after $'def transform(g):\n    return NS.a\n'
        job reads $'def transform(g):\n    return [BUF.getvalue(), ARRAY[0], LOCK.locked(), repr(COUNTER), P.x]\n'
    } > "$D/jobs.jsonl"
    same_as_fork
    [ "$(jq -sc 'map(select(.id | endswith("-after")) | .outputs[0])' "$D/fork.jsonl")" = '[0,"",1,"ab",true,false,false,1,1,1,1]' ]
    # Each write replaced its process; reading them did not.
    [ "$(jq -sc 'map(select(.id | endswith("-after") or . == "reads" | not) | .worker_replaced)' "$D/reuse.jsonl")" = \
        '["poisoned: fitrun_prelude.COUNTER was changed in place","poisoned: fitrun_prelude.BUF was changed in place","poisoned: fitrun_prelude.ARRAY was changed in place","poisoned: fitrun_prelude.BIN was changed in place","poisoned: fitrun_prelude.LOCK was changed in place","poisoned: fitrun_prelude.RLOCK was changed in place","poisoned: fitrun_prelude.P was changed in place","poisoned: object fitrun_prelude.REG['"'"'a'"'"'] was changed (x replaced)","poisoned: fitrun_prelude.REG['"'"'l'"'"'] was changed in place","poisoned: fitrun_prelude.REG['"'"'t'"'"'][1][0] was changed in place","poisoned: object fitrun_prelude.NS was changed (a replaced)"]' ] ||
        { jq -sc 'map([.id, .worker_replaced])' "$D/reuse.jsonl"; false; }
    [ "$(r "$D/reuse.jsonl" reads .worker_replaced)" = null ]
}

@test "python reuse: by default a process is replaced once it holds half the memory limit, which a later prediction would lack" {
    mkdir "$D/cache"
    : > "$D/cache/prelude.py"
    # A CPU budget of its own: writing 250M page by page takes about a
    # second of CPU where a page fault costs 17 µs.
    python_profile "$D/cache/p.ini" 1 10s 400M "isolation = reuse"
    sed -i 's/^cpu_time = 1s$/cpu_time = 10s/' "$D/cache/p.ini"
    {
        job keep $'import struct\ndef transform(g):\n    struct.calcsize(b"x" * (250 << 20))\n    return g\n'
        job next $'def transform(g):\n    return g\n'
    } > "$D/jobs.jsonl"
    run_with "$D/cache/p.ini" "$D/out.jsonl"
    [ "$status" -eq 0 ]
    # A cache the check does not see (struct's of compiled formats, kept in
    # C by the _struct extension: state kept in C, a documented limit)
    # keeps 250M: above 200M (half of 400M), the process goes, and the
    # next prediction has its limit as under fork.
    [[ "$(r "$D/out.jsonl" keep .worker_replaced)" =~ ^\"memory:\ [0-9]+\ MiB\ resident,\ above\ 200\ MiB\"$ ]] || { cat "$D/out.jsonl"; false; }
    [ "$(jq -sc 'map(.status)' "$D/out.jsonl")" = '["ok","ok"]' ] || { cat "$D/out.jsonl"; false; }
    # Set, max_memory is taken as it is.
    python_profile "$D/cache/p.ini" 1 10s 400M "isolation = reuse" "max_memory = 390M"
    sed -i 's/^cpu_time = 1s$/cpu_time = 10s/' "$D/cache/p.ini"
    run_with "$D/cache/p.ini" "$D/out.jsonl"
    [ "$status" -eq 0 ]
    [ "$(r "$D/out.jsonl" keep .worker_replaced)" = null ]
}

@test "python reuse: honest code that defines dataclasses, or imports fractions or decimal, keeps its process; the same writes to the prelude's do not" {
    {
        job nt $'from collections import namedtuple\nP = namedtuple("P", "x y", defaults=[0])\ndef transform(g):\n    return [list(P(1))]\n'
        job dc $'from dataclasses import dataclass, field\n@dataclass(frozen=True)\nclass P:\n    x: int = 0\n    y: list = field(default_factory=list)\ndef transform(g):\n    return [[P(3).x]]\n'
        job tn $'from typing import NamedTuple\nclass P(NamedTuple):\n    x: int = 5\ndef transform(g):\n    return [[P().x]]\n'
        job doc $'class A:\n    pass\nA.__doc__ = "own"\ndef transform(g):\n    return [[len(A.__doc__)]]\n'
        job num $'import fractions, decimal, statistics\ndef transform(g):\n    return [[int(fractions.Fraction(6, 3))]]\n'
        job onprelude $'from dataclasses import dataclass\ndataclass(collections.Counter)\ndef transform(g):\n    return g\n'
        job defaults $'helper.__defaults__ = (5,)\ndef transform(g):\n    return g\n'
        job frame $'import sys\nf = sys._getframe(1)\ndef transform(g):\n    return g\n'
    } > "$D/jobs.jsonl"
    run_both
    # The same outputs as under fork; a class the prediction made, which
    # nothing inherits from, is its own (its dunder writes tell nothing),
    # while a dunder write to the prelude's, or a frame, still has the
    # process replaced. namedtuple writes its new __new__'s defaults, a
    # function's: that is reported too.
    [ "$(jq -sc 'map([.id, .status, .outputs])' "$D/reuse.jsonl")" = "$(jq -sc 'map([.id, .status, .outputs])' "$D/fork.jsonl")" ]
    [ "$(jq -sc 'map([.id, .worker_replaced])' "$D/reuse.jsonl")" = '[["nt","poisoned: it used object.__setattr__"],["dc",null],["tn","poisoned: it used object.__setattr__"],["doc",null],["num",null],["onprelude","poisoned: class collections.Counter was changed (__dataclass_params__ added)"],["defaults","poisoned: it used object.__setattr__"],["frame","poisoned: it used sys._getframe"]]' ] || { cat "$D/reuse.jsonl"; false; }
}

@test "python reuse: the runtime's own classes, finalizers run by the put-back or of the prediction's and its modules' globals, decimal's template contexts, a stream's buffer, a base class others inherit from: the next prediction sees what fork gives it" {
    victim_sorted=$'def transform(g):\n    return [sorted([3, 1, 2])]\n'
    {
        job own $'c = [c for c in object.__subclasses__() if c.__name__ == "_Baseline"][0]\nc.check = lambda self: ""\nimport builtins\nbuiltins.sorted = lambda x: [7]\ndef transform(g):\n    return g\n'
        job own-after "$victim_sorted"
        job own2 $'c = [c for c in object.__subclasses__() if c.__name__ == "_Namespaces"][0]\nc._check_namespaces = lambda self: ""\ndef transform(g):\n    return g\n'
        job own2-after "$victim_sorted"
        job putback $'import copy, shutil\nclass Bomb:\n    def __del__(self):\n        copy._deepcopy_dispatch[list] = lambda x, memo: [5]\ndef transform(g):\n    shutil._ARCHIVE_FORMATS["zz"] = (Bomb(), [], "planted")\n    return g\n'
        job putback-after $'import copy\ndef transform(g):\n    return copy.deepcopy(g)\n'
        # A finalizer that runs as what it was kept in is put back, after
        # the namespaces were compared: looked at once more.
        job putback2 $'import fitrun_prelude, json\nclass Bomb:\n    def __del__(self):\n        fitrun_prelude.helper = lambda x: 999\njson.decoder.BACKSLASH["zz"] = Bomb()\ndef transform(g):\n    return g\n'
        job putback2-after $'import fitrun_prelude\ndef transform(g):\n    return [fitrun_prelude.helper(1)]\n'
        job putback3 $'import os, warnings\nclass Bomb:\n    def __del__(self):\n        os.chdir("/")\nwarnings.filters.insert(0, ("ignore", None, Warning, None, 0, Bomb()))\ndef transform(g):\n    return g\n'
        job putback3-after $'import os\ndef transform(g):\n    return [os.getcwd()]\n'
        # A global's finalizer, freed with the prediction's globals (a cycle
        # with its function): within the check, not in a collection during
        # the next prediction (300,000 lists make one).
        job globalfin $'import fitrun_prelude\nclass Bomb:\n    def __del__(self):\n        fitrun_prelude.helper = lambda x: 999\nX = Bomb()\ndef transform(g):\n    return g\n'
        job globalfin-after $'import fitrun_prelude\ndef transform(g):\n    junk = [[i] for i in range(300000)]\n    return [fitrun_prelude.helper(1)]\n'
        # A finalizer that leaves a new cycle (a second collection frees it),
        # and one that leaves one each time (the process goes).
        job nestfin $'import fitrun_prelude\nclass Bomb2:\n    def __del__(self):\n        fitrun_prelude.helper = lambda x: 999\nclass Bomb1:\n    def __del__(self):\n        b = Bomb2()\n        b.me = b\nX = Bomb1()\ndef transform(g):\n    return g\n'
        job nestfin-after $'import fitrun_prelude\ndef transform(g):\n    junk = [[i] for i in range(300000)]\n    return [fitrun_prelude.helper(1)]\n'
        job endless $'class Bomb:\n    def __del__(self):\n        b = Bomb()\n        b.me = b\nX = Bomb()\ndef transform(g):\n    return g\n'
        job endless-after $'def transform(g):\n    junk = [[i] for i in range(300000)]\n    return [len(junk)]\n'
        # The same in a module it put in sys.modules (or imported first).
        job modfin $'import fitrun_prelude, sys, types\nclass Bomb:\n    def __del__(self):\n        fitrun_prelude.helper = lambda x: 999\nm = types.ModuleType("planted")\nexec("def f():\\n    pass\\n", m.__dict__)\nm.X = Bomb()\nsys.modules["planted"] = m\ndel m\ndef transform(g):\n    return g\n'
        job modfin-after $'import fitrun_prelude\ndef transform(g):\n    junk = [[i] for i in range(300000)]\n    return [fitrun_prelude.helper(1)]\n'
        job dec $'import decimal\ndef transform(g):\n    decimal.DefaultContext.prec = 3\n    decimal.BasicContext.prec = 2\n    return g\n'
        job dec-after $'import decimal\ndef transform(g):\n    with decimal.localcontext(decimal.BasicContext):\n        x = str(decimal.Decimal(1) / decimal.Decimal(7))\n    return [[decimal.Context().prec, x]]\n'
        job buf $'import sys\ndef transform(g):\n    b = sys.stdout.buffer\n    real = type(b).write\n    b.write = lambda data: real(b, data.replace(b"hello", b"HACKED"))\n    return g\n'
        job buf-after $'def transform(g):\n    print("hello")\n    return g\n'
        job bases $'import tokenize\nclass Evil(tuple):\n    __slots__ = ()\n    def __len__(self):\n        return 99\ndef transform(g):\n    tokenize.TokenInfo.__bases__[0].__bases__ = (Evil,)\n    return g\n'
        job bases-after $'import tokenize, io\ndef transform(g):\n    return [[len(t) for t in tokenize.generate_tokens(io.StringIO("x = 1\\n").readline)]]\n'
    } > "$D/jobs.jsonl"
    run_both
    [ "$(jq -sc 'map([.id, .status, .outputs, .stdout])' "$D/reuse.jsonl")" = "$(jq -sc 'map([.id, .status, .outputs, .stdout])' "$D/fork.jsonl")" ] || { cat "$D/reuse.jsonl"; false; }
    [ "$(jq -sc 'map(select(.worker_replaced) | [.id, .worker_replaced])' "$D/reuse.jsonl")" = '[["own","poisoned: the runtime'"'"'s own code was changed"],["own2","poisoned: the runtime'"'"'s own code was changed"],["putback","poisoned: a table was written to again as it was put back (a finalizer)"],["putback2","poisoned: module fitrun_prelude was changed (helper replaced)"],["globalfin","poisoned: module fitrun_prelude was changed (helper replaced)"],["nestfin","poisoned: module fitrun_prelude was changed (helper replaced)"],["endless","poisoned: its finalizers kept leaving garbage for later collections"],["modfin","poisoned: module fitrun_prelude was changed (helper replaced)"],["bases","poisoned: it used object.__setattr__"]]' ] || { cat "$D/reuse.jsonl"; false; }
}
