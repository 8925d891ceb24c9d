#!/usr/bin/env bats
# `passed` is Python's own `==`: fitrun's scorer (launcher/verdict/verdict.c)
# against /usr/bin/python3 on a generated corpus of value pairs
# (tests/python/eq_corpus.py), directly and through a real run.

bats_require_minimum_version 1.5.0

setup() {
    FITRUN=${FITRUN:?FITRUN must point at the fitrun binary}
    FITRUN_BUILD=${FITRUN_BUILD:-$(dirname "$FITRUN")}
    SRC=${FITRUN_SRC:-$BATS_TEST_DIRNAME/../..}
    D=$BATS_TEST_TMPDIR
    /usr/bin/python3 "$SRC/tests/python/eq_corpus.py" > "$D/pairs.tsv"
    : > "$D/prelude.py"
    cat > "$D/p.ini" <<EOF
[sandbox]
preset = python
cpu_time = 30s
result = 16M
[runtime]
kind = python
interpreter = /usr/bin/python3
prelude = $D/prelude.py
EOF
}

teardown() {
    local pids
    pids=$(pgrep -f "$D/" || true)
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
}

@test "python scoring: the scorer agrees with Python's == on every pair of the corpus" {
    [ "$(wc -l < "$D/pairs.tsv")" -gt 10000 ]
    # both verdicts are well represented
    [ "$(awk -F'\t' '$3 == 1' "$D/pairs.tsv" | wc -l)" -gt 1000 ]
    run "$FITRUN_BUILD/tests/helpers/py_equal" < "$D/pairs.tsv"
    echo "$output" | tail -20
    [ "$status" -eq 0 ]
    [[ "${lines[-1]}" =~ ^[0-9]+\ pairs,\ 0\ disagree$ ]]
}

@test "python scoring: passed in a real run equals Python's == on the corpus (outputs returned by predictions)" {
    # One job: transform(i) returns the i-th output value; "expected" holds
    # the other side of each pair. Pairs whose expected value is null are
    # not scored (null = unknown) and left out.
    /usr/bin/python3 - "$D" <<'PY'
import json, sys
d = sys.argv[1]
seen, exp, out, verdict = set(), [], [], []
for line in open(f"{d}/pairs.tsv"):
    e, o, v = line.rstrip("\n").split("\t")
    if e == "null" or (e, o) in seen:
        continue
    seen.add((e, o))
    exp.append(json.loads(e)); out.append(json.loads(o)); verdict.append(v == "1")
code = f"import json\nOUT = json.loads({json.dumps(json.dumps(out))})\ndef transform(i):\n    return OUT[i]\n"
with open(f"{d}/jobs.jsonl", "w") as f:
    f.write(json.dumps({"id": "corpus", "code": code, "inputs": list(range(len(out))), "expected": exp}) + "\n")
json.dump(verdict, open(f"{d}/verdicts.json", "w"))
PY
    run --separate-stderr "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl" --workers 1 --progress none
    [ "$status" -eq 0 ]
    [ "$(jq -r .status "$D/out.jsonl")" = ok ]
    run jq -rn --slurpfile r "$D/out.jsonl" --slurpfile v "$D/verdicts.json" '
        [range($v[0] | length) | select($r[0].passed[.] != $v[0][.])] as $bad
        | "\($v[0] | length) pairs, \($bad | length) disagree: \($bad[:5] | map({i: ., out: $r[0].outputs[.], python: $v[0][.]}))"'
    echo "$output"
    [[ "$output" =~ ^[0-9]{4,}\ pairs,\ 0\ disagree ]]
}

@test "python scoring: grids of False/True score as Python scores them against 0/1 (arc-dsl's F and T)" {
    jq -cn '{id: "ft", code: "F, T = False, True\ndef transform(g):\n    return tuple(tuple(T if c else F for c in r) for r in g)\n",
             inputs: [[[0, 1], [1, 0]], [[2, 0]]], expected: [[[0, 1], [1, 0]], [[2, 0]]]}' > "$D/jobs.jsonl"
    run --separate-stderr "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl" --progress none
    [ "$status" -eq 0 ]
    # True == 1 and False == 0, but True != 2
    [ "$(jq -c '[.status, .outputs, .passed]' "$D/out.jsonl")" = '["ok",[[[false,true],[true,false]],[[true,false]]],[true,false]]' ]
}
