#!/usr/bin/env bash
# make-seeds.sh OUT — raw seed inputs for every harness, from the fixture
# trees (tests/fixtures/), the profiles and the values the unit tests use:
# OUT/<harness>/<name>. `scripts/dev fuzz-seeds` minimises them with
# libFuzzer's -merge=1 into tests/fuzz/corpus/<harness>/, which is checked in.
set -euo pipefail
out=${1:?usage: make-seeds.sh OUT}
src=$(cd "$(dirname "$0")/../.." && pwd)
fixtures=$src/tests/fixtures
mkdir -p "$out"

put() { # put HARNESS  (content on stdin; named by its SHA-1, as libFuzzer names inputs)
    mkdir -p "$out/$1"
    local tmp
    tmp=$(mktemp "$out/$1/.new.XXXXXX")
    cat > "$tmp"
    mv "$tmp" "$out/$1/$(sha1sum < "$tmp" | cut -c1-40)"
}
each() { # each HARNESS VALUE...: one seed per value, written as is
    local h=$1 v
    shift
    for v in "$@"; do printf '%s' "$v" | put "$h"; done
}

for f in "$fixtures"/*/; do
    f=${f%/}
    # fuzz_detect: the whole tree as "@@ PATH" records, and its environment.
    {
        while IFS= read -r -d '' file; do
            rel=${file#"$f"}
            case $rel in /README | /expected.json | /env) continue ;; esac
            printf '@@ %s\n' "$rel"
            cat "$file"
            [ -z "$(tail -c 1 "$file")" ] || printf '\n' # a record ends with its line
        done < <(find "$f" -type f -print0 | sort -z)
        if [ -f "$f/env" ]; then
            printf '@@ env\n'
            cat "$f/env"
        fi
    } | put detect
    [ -f "$f/proc/self/mountinfo" ] && put mountinfo < "$f/proc/self/mountinfo"
    [ -f "$f/proc/self/cgroup" ] && put proc_cgroup < "$f/proc/self/cgroup"
    [ -f "$f/proc/meminfo" ] && put cgroup_files < "$f/proc/meminfo"
    [ -f "$f/sys/devices/system/cpu/online" ] && put cpulist < "$f/sys/devices/system/cpu/online"
    if [ -f "$f/proc/self/status" ]; then
        sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$f/proc/self/status" | put cpulist
    fi
    if [ -d "$f/sys/fs/cgroup" ]; then
        while IFS= read -r -d '' file; do
            case $file in
            *cpuset*cpus*) put cpulist < "$file" ;;
            *) put cgroup_files < "$file" ;;
            esac
        done < <(find "$f/sys/fs/cgroup" -type f -print0 | sort -z)
    fi
    # fuzz_scheduler: the environment, a NUL, the machine ad it names.
    if [ -f "$f/env" ]; then
        ad=$(sed -n 's/^_CONDOR_MACHINE_AD=//p' "$f/env")
        { cat "$f/env"; printf '\0'; [ -n "$ad" ] && [ -f "$f$ad" ] && cat "$f$ad"; true; } | put scheduler
    fi
done

# v1 quota + period (the harness splits at the NUL), OOM counters.
printf '150000\n\0100000\n' | put cgroup_files
printf -- '-1\n\0100000\n' | put cgroup_files
each cgroup_files $'oom_kill_disable 0\nunder_oom 0\noom_kill 3\n' \
    $'low 0\nhigh 12\nmax 40\noom 5\noom_kill 4\noom_group_kill 1\n' \
    $'max 100000\n' $'50000 100000\n' '9223372036854771712' 'size=65536k' '65536k' '50%' '1g' \
    $'cache 0\nhierarchical_memory_limit 1073741824\n'
each cpulist '0-3,8,10-11' '0-15:2/4' '0-8191' '' $'0-3\n' '60-67'
each scheduler $'SLURM_JOB_CPUS_PER_NODE=72(x2),36\nSLURM_NODEID=2\n' $'SLURM_CPUS_PER_TASK=4\nSLURM_MEM_PER_NODE=2048\n' \
    $'NSLOTS=8\nPBS_NP=4\nNCPUS=2\nLSB_DJOB_NUMPROC=3\n'
printf 'NSLOTS=3\n\0TotalCpus = 256.0\n  cpus   =   8\nMemory=16000\nName = "slot1@x"\nDisk = Memory * 2\n' | put scheduler

for ini in $(cd "$src" && git ls-files '*.ini' 2>/dev/null || find . -name '*.ini'); do
    put profile < "$src/$ini"
done
each profile $'[sandbox]\nallow = socket, bind connect\nread = /srv/data, /opt/my lib\npass_env = HF_*, TOKEN\n' \
    $'[resources]\ncpus = 1.5\nworkers = auto\nrounding = nearest\n[env]\nOMP_PROC_BIND = close\n' \
    $'[runtime]\nkind = python\nprelude = lib/pre.py\nentry = solve\n[sandbox]\nuser = root\nuid_base = 70000\n'

each units 4096 0 64k 64KiB 512M 2G 1.5GiB 1T 100B ' 64 k ' .5k 0.25k 3. 1048576T 1152921504606846976 \
    2s 500ms 1.5s 2m 1h 250us 1min 0.5sec 8760h 365d 1e3 0x10 -1 true off 1.5 8192 auto none
each term_text 'plain id' $'\e[31mred\e[0m' $'a\nb\tc\r' $'bidi \u202egnp.exe' $'\u2028 \ufeff \u0085' \
    $'bad \xff\xfe utf8 \xc0\xaf' 'café ✓ 𝔘'
head -n 3 "$src/samples/arc/jobs.jsonl" 2>/dev/null | while IFS= read -r line; do printf '%s' "$line" | put term_text; done

each shard 0/4 3/4 1/1 auto 1-02:03:04 90m 45s 30 '2:00:00' 'results.3.jsonl' 'out/r.{shard}.jsonl'
each shard $'auto\nSLURM_ARRAY_TASK_ID=5\nSLURM_ARRAY_TASK_MIN=1\nSLURM_ARRAY_TASK_MAX=9\nSLURM_ARRAY_TASK_STEP=2\nSLURM_ARRAY_TASK_COUNT=5\n' \
    $'auto\nSLURM_ARRAY_TASK_ID=2\nFITRUN_SHARD_COUNT=4\n'

# Job lines (exec and python) from the sample and test job files; result
# files as fitrun run writes them (field order of include/fitrun/jobs.h),
# with a DuplicateId, a timeout, python fields and a torn last line.
for jobs in samples/arc/jobs.jsonl tests/containers/exec/jobs.jsonl tests/docs/kit/jobs.jsonl; do
    [ -f "$src/$jobs" ] || continue
    head -n 40 "$src/$jobs" | while IFS= read -r line; do printf '%s' "$line" | put job_line; done
done
each job_line '{"id":"x","argv":["sh","-c","echo \u00e9"],"stdin":"a\u0000b"}' '{"id":"","argv":[]}' \
    '{"id":"d","id":"e"}' '{"id":"p","code":"def transform(g): return g","inputs":[[[1]]],"expected":[[[1]]],"entry":"transform"}' \
    '[1,2]' '{"id":5}' '{"id":"a\u0000b"}' '{"id":"\ud800"}' '{}ad}a' '{"id":"e","o":[{},{"k":{}}]}'
r='{"id":"a1","status":"ok","exit_code":0,"signal":null,"syscall":null,"error_type":null,"error_message":null,"stdout":"hi\n","stderr":"","cpu_ms":1,"wall_ms":2,"max_rss_kb":1234,"worker":0,"line":1}'
d='{"id":"a1","status":"invalid","exit_code":null,"signal":null,"syscall":null,"error_type":"DuplicateId","error_message":"line 3: duplicate id '"'"'a1'"'"' (an earlier line has it)","stdout":null,"stderr":null,"cpu_ms":null,"wall_ms":null,"max_rss_kb":null,"worker":null,"line":3}'
t='{"id":"slow","status":"timeout","exit_code":null,"signal":"SIGKILL","syscall":null,"error_type":"CPUTimeout","error_message":"cpu time limit","stdout":"","stderr":"","cpu_ms":2001,"wall_ms":2100,"max_rss_kb":900,"worker":1,"line":2,"timeout":"cpu","attempts":2}'
p='{"id":"007bbfb7#0","status":"ok","exit_code":0,"signal":null,"syscall":null,"error_type":null,"error_message":null,"stdout":"","stderr":"","cpu_ms":3,"wall_ms":4,"max_rss_kb":20000,"worker":0,"line":4,"outputs":[[[1]]],"passed":[true]}'
printf '%s\n%s\n%s\n%s\n%s' "$r" "$t" "$d" "$p" '{"id":"torn","status":"o' | put result_line
printf '%s\n\n{"id":null,"status":"invalid","line":5}\n{"status":"ok"}\nnot json\n' "$r" | put result_line
# Found by fuzz_result_line (an id holding NUL read as another job's id).
printf '%s\n' '{"id":"a\u0000b","status":"ok","line":1}' | put result_line
for res in tests/bench/arc-mini/outcomes.jsonl tests/bench/arc-mini/scoring-outcomes.jsonl; do
    [ -f "$src/$res" ] && head -n 20 "$src/$res" | put result_line
done

# fuzz_jsonscan: JSON texts as they reach the scanner: job lines, reports as
# a prediction writes them (docs/python-runtime.md), tricky values.
for jobs in samples/arc/jobs.jsonl tests/containers/exec/jobs.jsonl; do
    [ -f "$src/$jobs" ] && head -n 8 "$src/$jobs" | while IFS= read -r line; do printf '%s' "$line" | put jsonscan; done
done
each jsonscan '{"outputs":[[[1,2],[3,4]]],"error_type":null,"error_message":null,"error_line":null,"memory":false}' \
    '{"outputs":[],"error_type":"ZeroDivisionError","error_message":"division by zero","error_line":3,"memory":false}' \
    '{"sandbox_error":1}' '"a\u0000b\ud83d\ude00\u00e9"' '[1.5,-0,1e308,true,null,{"k":[]},-9223372036854775808]' \
    '{"outputs":[1],"outputs":[2]}' '  [ [ ] , { } ]  ' \
    '{"outputs":[{"\u0000":1}]}' # found by fuzz_jsonscan (jansson refuses NUL in keys)

# fuzz_worker_msg: what-fitrun-saw flags, the message's length, a channel
# message (fitrun_runtime.py's MSG_* structs), then a report.
/usr/bin/python3 - "$out/worker_msg" <<'EOF'
import hashlib, os, struct, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
def put(flags, msg, report=b""):
    data = bytes([flags, len(msg)]) + msg + report
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
exited = lambda ws=0, nr=-1, ut=12000, st=3000, rss=20480: struct.pack("=cxxxIiiqqqqq", b"E", 7, ws, nr, ut, st, rss, 15000, 900)
put(0, exited(), b'{"outputs":[[[1,2],[3,4]]],"error_type":null,"error_message":null,"error_line":null,"memory":false}')
put(0, exited(), b'{"outputs":[null,2],"error_type":"ZeroDivisionError","error_message":"division by zero","error_line":3,"memory":false}')
put(0, exited(), b'{"outputs":[],"error_type":"MemoryError","error_message":"","memory":true}')
put(0, exited(), b'{"sandbox_error":1}')
put(0, exited(7 << 8), b"")
put(0, exited(9), b"")
put(8, exited(24), b"")
put(32, exited(), b'{"outputs":[[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24]]}')
put(4, exited(9), b'{"outputs":[')
put(0, exited(31, 41), b"")
put(0, exited(9, ut=-1, st=-1), b"")  # found by fuzz_worker_msg (a negative time became the rusage)
put(0, struct.pack("=cxxxIi", b"S", 7, 4242))
put(0, struct.pack("=cxxxI", b"F", 7) + "fork failed: Resource temporarily unavailable".encode())
EOF

echo "make-seeds.sh: $(find "$out" -type f | wc -l) seeds in $out" >&2
