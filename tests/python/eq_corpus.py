#!/usr/bin/python3
"""eq_corpus.py — pairs of JSON values and Python's own `==` on them, to
test fitrun's scorer (launcher/verdict/verdict.c) against it.

    /usr/bin/python3 tests/python/eq_corpus.py [--seed N] [--random N] > pairs.tsv

One pair per line: EXPECTED <TAB> OUTPUT <TAB> 0|1, where 1 means
json.loads(EXPECTED) == json.loads(OUTPUT) in Python. EXPECTED is what a
job's "expected" can hold (what jansson reads: integers within 64 bits,
finite numbers, no NUL in keys); OUTPUT is what a prediction's report can
hold (the same), written in every spelling JSON allows for it (escaped or
raw UTF-8, spaced or compact, exponents), since fitrun compares the text.
Objects never repeat a key: no Python dict does.
"""
import argparse
import itertools
import json
import math
import random
import sys

I53, I63 = 2 ** 53, 2 ** 63
SCALARS = [
    None, True, False, 0, 1, -1, 2, 7, 10, 255, 1000,
    I53 - 1, I53, I53 + 1, -I53, -I53 - 1, I63 - 1, -I63, -I63 + 1, 10 ** 16, 10 ** 18,
    0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 7.0, 0.1, 0.30000000000000004, 1e16, 1e-300, 5e-324,
    1.7976931348623157e308, -1.7976931348623157e308, float(I53), float(I53 + 2), float(I63), -float(I63),
    9.007199254740993e15, 1e18, 123456789.0, 3.0000000000000004,
    "", "a", "A", "0", "1", "true", "null", "a\u0000b", "a\u0000c", "\u00e9", "e\u0301", "\u20ac",
    "\U0001F600", "\t\n\"\\/", "x y", " a", "a ",
]


def containers(rng, depth):
    """A random value built of SCALARS, lists and dicts."""
    if depth == 0 or rng.random() < 0.35:
        return rng.choice(SCALARS)
    if rng.random() < 0.6:
        return [containers(rng, depth - 1) for _ in range(rng.randint(0, 4))]
    keys = rng.sample(["a", "b", "c", "k", "\u00e9", "a\u0000b"[:1], "1", "", "0"], rng.randint(0, 4))
    return {k: containers(rng, depth - 1) for k in keys}


def mutate(rng, v):
    """A value close to v: equal in Python (bools for 0/1, floats for
    ints), or differing in one place."""
    if isinstance(v, list):
        if v and rng.random() < 0.7:
            i = rng.randrange(len(v))
            return v[:i] + [mutate(rng, v[i])] + v[i + 1:]
        return v + [0] if rng.random() < 0.5 else v[:-1]
    if isinstance(v, dict):
        if v and rng.random() < 0.7:
            k = rng.choice(list(v))
            d = dict(v)
            d[k] = mutate(rng, v[k])
            items = list(d.items())
            rng.shuffle(items)
            return dict(items)
        d = dict(v)
        if d and rng.random() < 0.5:
            d.pop(rng.choice(list(d)))
        else:
            d["z"] = 1
        return d
    if v is True or v is False:
        return rng.choice([int(v), float(v), not v, v])
    if isinstance(v, int):
        return rng.choice([float(v) if abs(v) < 2 ** 1023 else v, v + 1, bool(v) if v in (0, 1) else v, v])
    if isinstance(v, float):
        return rng.choice([int(v) if v.is_integer() and abs(v) < I63 else v, -v, v * 2, v])
    return rng.choice(SCALARS)


def readable(v):
    """Can jansson (expected) and fitrun's strict scan (output) hold v?"""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return True
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, int):
        return -I63 <= v < I63
    if isinstance(v, list):
        return all(readable(x) for x in v)
    return all("\u0000" not in k and readable(x) for k, x in v.items())


def spellings(rng, v):
    """Texts of v: compact, escaped, spaced, and with a number rewritten."""
    out = [json.dumps(v, ensure_ascii=False, separators=(",", ":")), json.dumps(v), json.dumps(v, indent=1)]
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e300:
        out.append(f"{v:.0f}.0e0")
    if isinstance(v, str):
        out.append('"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c for c in v) + '"')
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--random", type=int, default=3000, help="random nested pairs (default 3000)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    pairs = list(itertools.product(SCALARS, SCALARS))
    grids = [[[0, 1], [1, 0]], [[False, True], [True, False]], [[0.0, 1.0], [1.0, 0.0]], [[1, 1], [0, 0]]]
    pairs += list(itertools.product(grids, grids))
    for _ in range(a.random):
        v = containers(rng, rng.randint(1, 5))
        pairs.append((v, mutate(rng, v)) if rng.random() < 0.8 else (v, containers(rng, 3)))
    n = 0
    for exp, out in pairs:
        if not (readable(exp) and readable(out)):
            continue
        e_text = json.dumps(exp, ensure_ascii=False, separators=(",", ":"))
        for o_text in spellings(rng, out):
            verdict = json.loads(e_text) == json.loads(o_text)
            sys.stdout.write(f"{e_text}\t{o_text.replace(chr(10), ' ')}\t{int(verdict)}\n")
            n += 1
    print(f"eq_corpus.py: {n} pairs", file=sys.stderr)


if __name__ == "__main__":
    main()
