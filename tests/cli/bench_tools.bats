#!/usr/bin/env bats
# bench_tools.bats — the bench tools of bench/README.md ("arc-dsl corpus,
# peers and scale") keep working without arc-dsl: the unit tests of
# tests/bench/test_bench_tools.py (generator on a stand-in DSL, the five
# in-process peers, the comparer, the projection), then fitrun itself
# against the peers' known outcomes, and a one-round scale run.

bats_require_minimum_version 1.5.0

setup() {
    SRC=${FITRUN_SRC:-$BATS_TEST_DIRNAME/../..}
    export FITRUN_SRC=$SRC
    FITRUN=${FITRUN:-$SRC/build/fitrun}
    MINI=$SRC/tests/bench/arc-mini
    D=$(mktemp -d /tmp/fitrun-test-bench.XXXXXX)
}

teardown() {
    rm -rf "$D"
}

@test "bench tools: unittest suite" {
    cd "$SRC/tests/bench"
    run /usr/bin/python3 -m unittest -v test_bench_tools
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" =~ Ran\ [0-9]+\ tests ]]
}

@test "arc_compare: fitrun's verdicts equal the in-process peers' known outcomes on the fixture" {
    "$FITRUN" run --profile "$MINI/profile.ini" --jobs "$MINI/jobs.jsonl" --out "$D/fitrun.jsonl" --quiet
    run /usr/bin/python3 "$SRC/bench/arc_compare.py" --jobs "$MINI/jobs.jsonl" \
        --names fitrun,known "$D/fitrun.jsonl" "$MINI/outcomes.jsonl"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" =~ known\ +14\ +14\ +0\ +0\ +0\ +0 ]]
}

@test "arc_compare: fitrun scores False/True against 0/1 as Python's == does" {
    "$FITRUN" run --profile "$MINI/profile.ini" --jobs "$MINI/scoring.jsonl" --out "$D/fitrun.jsonl" --quiet
    run /usr/bin/python3 "$SRC/bench/arc_compare.py" --jobs "$MINI/scoring.jsonl" \
        --names fitrun,known "$D/fitrun.jsonl" "$MINI/scoring-outcomes.jsonl"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" =~ known\ +1\ +1\ +0\ +0\ +0\ +0 ]]
}

@test "scale: one round at 1 worker writes the table, the projection and the machine" {
    run --separate-stderr "$SRC/bench/scale.sh" --corpus "$MINI" --fitrun "$FITRUN" --workers 1 \
        --rounds 1 --runners fitrun,fitrun-reuse,pool,sequential,shared --perf off --no-warmup --out "$D/scale"
    echo "$output"
    echo "$stderr"
    [ "$status" -eq 0 ]
    grep -E '^\| 1 \| fitrun \| [0-9]+ \([0-9]+–[0-9]+\) \| – \| [0-9.]+× \| [0-9]+ \| [0-9.]+ \| [0-9]\.[0-9]{2} \| 0 \|$' "$D/scale/scale.md"
    grep -E '^\| 1 \| pool \| [0-9]+ .*\| 1\.00× \| [0-9]+ \(dispatcher\) \|' "$D/scale/scale.md"
    grep -E '^\| 1 \| in-process bound \(sequential [0-9]+/s × 1\) \| [0-9]+ \| – \| [0-9.]+× \| – \(no dispatcher\) \| [0-9.]+ \(its own\) \| [0-9]\.[0-9]{2} \(× 1\) \| 0 \|$' "$D/scale/scale.md"
    grep -E '^\| 1 \| scheduled bound \(its job times on 1 workers, in order, no overhead\) \| [0-9]+ \| – \| [0-9.]+× \|' "$D/scale/scale.md"
    grep -E '^\| 1 \| shared bound \(W in-process loops at once, one job counter\) \| [0-9]+ \([0-9]+–[0-9]+\) \| – \| [0-9.]+× \| – \(no dispatcher\) \| [0-9.]+ \| [0-9]\.[0-9]{2} \| 0 \|$' "$D/scale/scale.md"
    grep -qE '^Of the shared bound \(median against median\): fitrun at 1: [0-9]+%; .*pool at 1: [0-9]+%\.$' "$D/scale/scale.md"
    # The schedule has the tail: a long last job keeps one worker busy
    # while the other idles; a long first one does not.
    [ "$(/usr/bin/python3 -c "import sys; sys.path.insert(0, '$SRC/bench'); import scale
print(scale.scheduled_makespan([3, 3, 3, 9], 2), scale.scheduled_makespan([9, 3, 3, 3], 2))")" = "1.2e-05 9e-06" ]
    # reuse: a row where fitrun knows the key, else a note saying why not
    grep -qE '^\| 1 \| fitrun-reuse \|' "$D/scale/scale.md" ||
        grep -q "fitrun-reuse skipped: .*unknown key 'isolation'" "$D/scale/scale.md"
    grep -q "one launcher at [0-9]* µs of its own CPU per prediction tops out at" "$D/scale/scale.md"
    grep -q "^Machine: .* CPUs .* Linux .*; Python 3\." "$D/scale/scale.md"
    [ "$(wc -l < "$D/scale/scale.jsonl")" -ge 2 ]
    # The plot, drawn by Debian's python3-matplotlib (scripts/dev setup installs it)
    [ "$(head -c 8 "$D/scale/scale.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
    [[ "$stderr" == *"scale: wrote $D/scale/scale.png"* ]]
}

@test "device_pack: a pack that runs scale.sh with only its own libraries, the corpus's profile passing LD_LIBRARY_PATH" {
    local build=${FITRUN_BUILD:-$(dirname "$FITRUN")}
    run "$SRC/bench/device_pack.sh" --corpus "$MINI" --build "$build" --out "$D/pack" --jobs 6
    echo "$output"
    [ "$status" -eq 0 ]
    [ -x "$D/pack/fitrun" ] && [ -f "$D/pack/share/fitrun/python/fitrun_runtime.py" ]
    for l in libfitrun_sandbox.so libseccomp.so.2 libcap.so.2; do [ -f "$D/pack/lib/$l" ]; done
    [ "$(wc -l < "$D/pack/corpus/jobs.jsonl")" -eq 6 ]
    [ "$(sed -n '/^\[sandbox\]$/{n;p}' "$D/pack/corpus/profile.ini")" = "pass_env = LD_LIBRARY_PATH" ]
    # its libraries resolve from the pack
    [ "$(LD_LIBRARY_PATH=$D/pack/lib ldd "$D/pack/lib/libfitrun_sandbox.so" | awk '$1 == "libseccomp.so.2" {print $3}')" = "$D/pack/lib/libseccomp.so.2" ]
    cd "$SRC"
    PATH=/usr/bin:$PATH OUT=$D run --separate-stderr "$D/pack/scale.sh" --workers 1 --rounds 1 \
        --runners fitrun-reuse --perf off --no-warmup
    echo "$output"; echo "$stderr"
    [ "$status" -eq 0 ]
    grep -qE '^\| 1 \| fitrun-reuse \| [0-9]+ ' "$D/scale/scale.md"
    run "$SRC/bench/device_pack.sh" --corpus "$D/nowhere" --build "$build" --out "$D/pack2"
    [ "$status" -eq 2 ]
    [[ "$output" == *"$D/nowhere/jobs.jsonl: not found"* ]]
}

@test "launcher_instructions: two builds' instructions per prediction, their ratio and the same results; a static build refused" {
    dyn=$D/dyn
    cmake -S "$SRC" -B "$dyn" -DFITRUN_STATIC=OFF -DFITRUN_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$dyn" --target fitrun fitrun_sandbox_shared -j 2 >/dev/null
    run --separate-stderr "$SRC/bench/launcher_instructions.sh" --profile "$MINI/profile.ini" \
        --jobs "$MINI/jobs.jsonl" --small 2 a="$dyn" b="$dyn"
    echo "$output"
    echo "$stderr"
    [ "$status" -eq 0 ]
    [[ "$output" =~ a:\ [0-9,]+\ instructions\ for\ 14\ jobs,\ [0-9,]+\ for\ 2:\ [0-9,]+\ per\ prediction ]]
    # The same build twice: the same count, to within the loop's turns.
    [[ "$output" =~ per\ prediction\ b/a:\ (0\.9[5-9]|1\.0[0-5]) ]]
    [[ "$output" =~ b:\ own\ instructions\ per\ prediction,\ top\ functions ]]
    [[ "$output" =~ results:\ 14\ and\ 14,\ 0\ differ ]]
    run "$SRC/bench/launcher_instructions.sh" --profile "$MINI/profile.ini" --jobs "$MINI/jobs.jsonl" \
        a="$(dirname "$FITRUN")" b="$dyn"
    [ "$status" -eq 2 ]
    [[ "$output" =~ "is linked statically: configure" ]]
}

@test "wake_floor: a system call's cost, then both ways of dispatching, each with a median" {
    local bin=${FITRUN_BUILD:-$(dirname "$FITRUN")}/bench/wake_floor
    [ -x "$bin" ] || skip "no $bin (a build with the benchmarks)"
    run --separate-stderr "$bin" -w 2 -s 200 -n 100 -r 1
    echo "$output"; echo "$stderr"
    [ "$status" -eq 0 ]
    grep -qE '^one system call \(getppid, median of 1 x 100,000\): [0-9]+\.[0-9]{3} us$' <<<"$output"
    [ "$(grep -c '^one system call' <<<"$output")" -eq 1 ]
    grep -qE '^median  event   dispatcher +[0-9.]+ us/message  [01]\.[0-9]{2} wake-ups/message' <<<"$output"
    grep -qE '^median  batched dispatcher +[0-9.]+ us/message  [01]\.[0-9]{2} wake-ups/message' <<<"$output"
    grep -qE '^batched/event dispatcher CPU: [0-9]+\.[0-9]{2}$' <<<"$output"
}

@test "fork_floor: the fault cost, and trivial predictions through fitrun with fork and reuse" {
    run --separate-stderr /usr/bin/python3 "$SRC/bench/fork_floor.py" --heap-mib 4 --reps 5 \
        --fitrun "$FITRUN" --profile "$MINI/profile.ini" --n 20 --rounds 1
    echo "$output"; echo "$stderr"
    [ "$status" -eq 0 ]
    [[ "$output" =~ copy-on-write\ fault:\ [0-9.]+\ µs ]]
    grep -qE '^\| fork \| [0-9]+ \| [0-9]+ \| [0-9]+ \|$' <<<"$output"
    grep -qE '^\| reuse \| [0-9]+ \| [0-9]+ \| [0-9]+ \|$' <<<"$output"
}

@test "fork_handlers: each case prints its time and faults; an unknown one is refused" {
    local m
    for m in bare threading; do
        run /usr/bin/python3 "$SRC/bench/fork_handlers.py" "$m"
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" =~ ^$m\ +fork\ -\>\ first\ line\ +[0-9]+\ µs,\ +[0-9]+\ page\ faults\ \(median\ of\ 60\)\;\ loaded:\  ]]
    done
    [[ "$output" == *"loaded: threading" ]]
    run /usr/bin/python3 "$SRC/bench/fork_handlers.py" nope
    [ "$status" -eq 1 ]
    [[ "$output" == *"usage: fork_handlers.py {bare,threading,random,numpy}"* ]]
}

@test "reuse_gap: its timers still find their places in the runtime, and every part is measured" {
    run --separate-stderr /usr/bin/python3 "$SRC/bench/reuse_gap.py" --fitrun "$FITRUN" \
        --profile "$MINI/profile.ini" --jobs "$MINI/jobs.jsonl" --workers 1
    echo "$output"; echo "$stderr"
    [ "$status" -eq 0 ]
    [[ "$output" =~ ^14\ predictions,\ 1[0-3]\ with\ the\ figures ]]
    for part in wait pipes run report check gc namespaces restore ns_tags ns_compare ns_data; do
        grep -qE "^$part +[0-9]+ +[0-9]+$" <<<"$output"
    done
}

@test "peek_cold: both word readers, with and without the look-ahead, on the runtime's own addresses" {
    run --separate-stderr /usr/bin/python3 "$SRC/bench/peek_cold.py" --build "${FITRUN_BUILD:-$(dirname "$FITRUN")}" \
        --prelude "$MINI/prelude.py" --reps 5 --evict-mib 1
    echo "$output"; echo "$stderr"
    [ "$status" -eq 0 ]
    grep -qE '^\| function fields +\| [0-9]+ functions, [0-9]+ builtins, [0-9]+ words +\| +[0-9.]+ \| +[0-9.]+ \| +[0-9.]+× \|$' <<<"$output"
    grep -qE '^\| namespace counters +\| [0-9]+ dicts +\| +[0-9.]+ \| +[0-9.]+ \| +[0-9.]+× \|$' <<<"$output"
    grep -qE '^\| lists. items +\| [0-9]+ lists, [0-9]+ words +\| +[0-9.]+ \| +[0-9.]+ \| +[0-9.]+× \|$' <<<"$output"
}

@test "reuse_check: the check alone passes, hot and after the runtime's own writes with the caches flushed" {
    local mode
    for mode in "" "--after-prediction --evict-mib 1"; do
        # shellcheck disable=SC2086 # $mode: two options or none
        run --separate-stderr /usr/bin/python3 "$SRC/bench/reuse_check.py" --prelude "$MINI/prelude.py" --loops 5 \
            --sandbox-lib "${FITRUN_BUILD:-$(dirname "$FITRUN")}/lib/libfitrun_sandbox.so" $mode
        echo "$output"; echo "$stderr"
        [ "$status" -eq 0 ]
        [[ "$output" =~ ^python\ 3\.[0-9]+\.[0-9]+:\ namespaces\ [0-9]+ ]]
        [ "$(grep -cE "^check '': [0-9]+ µs$" <<<"$output")" -eq 3 ]
    done
}
