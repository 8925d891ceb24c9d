#!/usr/bin/env bash
# tests/containers/run-matrix.sh — fitrun inside real restricted containers.
#
# Builds docker/Dockerfile with podman (runc, the locally built Debian base
# image) and runs fitrun in one container per restricted shape people run it in:
#   none, --cpus=0.5, --cpus=1.5, --cpuset-cpus=1, --cpus=0.5 --cpuset-cpus=0,1,
#   --memory=256m, --pids-limit=64, --shm-size=64m (and 4g, the other side
#   of the /dev/shm rule), the default seccomp profile (and unconfined, the
#   control), the HTCondor shape (no quota, _CONDOR_MACHINE_AD with Cpus = 1),
#   fitrun as PID 1 (podman stop -> SIGTERM -> 143, orphans reaped, exit
#   codes), the image's default command, and the slim image as a wrapper.
# In each shape: `fitrun detect --json` is asserted against the limits (and
# says that fitrun's own cgroups are not delegated: read-only), the
# wrapper's exports against the plan, and `fitrun run` of the exec jobs in
# tests/containers/exec/ (and of the ARC sample once samples/arc/ exists)
# must give the same per-prediction outcomes (id, status, passed) as the
# same run on the host.
#
# Prints one PASS/FAIL/SKIP line per shape, the build and total wall times,
# and exits non-zero on any failure. Needs root: without it podman cannot set
# cgroup v1 limits here, so the script prints SKIP and exits 0.
#
# Environment (ctest sets the first four):
#   FITRUN, FITRUN_SRC, FITRUN_SHARED, FITRUN_BUILD   as for every system test
#   FITRUN_TEST_KEEP_IMAGE=0   also remove the fitrun-test:containers* images
#                              (default: keep them, so the next run's build is
#                              warm; every other image/container is removed)
#   FITRUN_TEST_SHAPES="a b"   run only these shapes (names as printed)
#   FITRUN_TEST_KEEP_TMP=1     keep the per-shape result folders for debugging
#
# Recipe and host quirks: ../shared/notes/containers.md (runc instead of
# crun, lowered ulimits, no registry, --network none) and docs/containers.md.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${FITRUN_SRC:-$(cd "$HERE/../.." && pwd)}
SHARED=${FITRUN_SHARED:-$SRC/../shared}
FITRUN=${FITRUN:-$SRC/build/fitrun}
PY=/usr/bin/python3
CHECK=("$PY" "$HERE/check.py")
TAG=fitrun-test:containers
KEEP_IMAGE=${FITRUN_TEST_KEEP_IMAGE:-1}
NAME=fitrun-test-containers-$$       # prefix of every container this run starts
LOCK=/run/lock/fitrun-test-containers.lock   # FHS: the place for lock files
GRACE=10                             # podman stop -t: seconds before SIGKILL
T_START=$EPOCHREALTIME

# Flags every podman command needs on this host (see the notes): runc (crun
# refuses hybrid cgroups), ulimits podman may not raise here, no registry.
PODMAN_LIMITS=(--runtime runc --ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
RUN=(podman run --rm "${PODMAN_LIMITS[@]}" --network none)

say() { printf '%s\n' "$*"; }
elapsed() { awk -v a="$1" -v b="${2:-$EPOCHREALTIME}" 'BEGIN { printf "%.1f", b - a }'; }

# ------------------------------------------------------------------ preflight
if [ "$(id -u)" != 0 ]; then
    say "SKIP containers: not root — podman cannot create containers with cgroup v1 limits here"
    exit 0
fi
missing=()
for p in podman runc debootstrap; do command -v "$p" >/dev/null || missing+=("$p"); done
if ((${#missing[@]})); then
    say "installing ${missing[*]} (scripts/dev PACKAGES has them)"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
      { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; }
    } >/dev/null || { say "FAIL containers: cannot install ${missing[*]}"; exit 1; }
fi
[ -x "$FITRUN" ] || { say "FAIL containers: no fitrun binary at $FITRUN (build first)"; exit 1; }
[ -x "$PY" ] || { say "FAIL containers: $PY is needed for the assertions"; exit 1; }

# One matrix at a time on this machine: several engineers (and ctest runs)
# share podman's image store and the two CPUs; the quota shapes measure
# nothing useful when two matrices compete. The script re-runs itself under
# flock -o, so that the lock's descriptor is not inherited by podman,
# conmon and the containers (a lingering child would hold the lock).
if [ -z "${FITRUN_TEST_CONTAINERS_LOCKED:-}" ]; then
    FITRUN_TEST_CONTAINERS_LOCKED=1 flock -o -w 900 -E 75 "$LOCK" bash "${BASH_SOURCE[0]}" "$@"
    rc=$?
    [ $rc = 75 ] && say "FAIL containers: another matrix held $LOCK for 15 minutes"
    exit $rc
fi

TMP=$(mktemp -d /tmp/fitrun-test-containers.XXXXXX)
BGPIDS=()
# libpod_parent cgroups present before this run belong to someone else's
# containers; only those created during the run are removed (when empty).
PRE_CGROUPS=$(ls -d /sys/fs/cgroup/*/libpod_parent 2>/dev/null | tr '\n' ' ')

cleanup() {
    local c p h
    for p in "${BGPIDS[@]}"; do kill "$p" 2>/dev/null; done
    for c in $(podman ps -a --format '{{.Names}}' 2>/dev/null | grep "^$NAME-"); do
        podman rm -f -t 0 "$c" >/dev/null 2>&1
    done
    for p in "${BGPIDS[@]}"; do wait "$p" 2>/dev/null; done
    if [ "$KEEP_IMAGE" = 0 ]; then
        podman rmi -f "$TAG" "$TAG-slim" "$TAG-build" >/dev/null 2>&1
    fi
    prune_images
    # podman (cgroupfs manager) leaves libpod_parent/conmon behind in every
    # v1 hierarchy; rmdir only ever removes an empty cgroup.
    for h in /sys/fs/cgroup/*/libpod_parent; do
        [ -d "$h" ] || continue
        case " $PRE_CGROUPS " in *" $h "*) continue ;; esac
        rmdir "$h/conmon" 2>/dev/null
        rmdir "$h" 2>/dev/null
    done
    if [ "${FITRUN_TEST_KEEP_TMP:-0}" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Images of earlier builds of docker/Dockerfile that nothing tags any more
# (every rebuild after a source change leaves the previous stage images
# behind). Only images carrying our stage labels are touched; removing a
# leaf also removes its parents that nothing else uses.
prune_images() {
    local ids
    mapfile -t ids < <(for l in fitrun fitrun-build fitrun-slim; do
                           podman images -a -q --filter dangling=true \
                               --filter "label=org.opencontainers.image.title=$l" 2>/dev/null
                       done | sort -u)
    ((${#ids[@]} == 0)) || podman rmi "${ids[@]}" >/dev/null 2>&1
    return 0
}

# ------------------------------------------------------------------ results
NPASS=0 NFAIL=0 NSKIP=0
FAILED=()
report() { # report SHAPE T0 [FAILURE...]
    local shape=$1 t0=$2; shift 2
    if (($#)); then
        NFAIL=$((NFAIL + 1)); FAILED+=("$shape")
        say "FAIL $shape ($(elapsed "$t0")s)"
        printf '       %s\n' "$@"
    else
        NPASS=$((NPASS + 1))
        say "PASS $shape ($(elapsed "$t0")s)"
    fi
}
skip() { NSKIP=$((NSKIP + 1)); say "SKIP $1: $2"; }
wanted() { [ -z "${FITRUN_TEST_SHAPES:-}" ] || [[ " $FITRUN_TEST_SHAPES " == *" $1 "* ]]; }

# ------------------------------------------------------------------ build
T0=$EPOCHREALTIME
if ! "$SHARED/tools/podman-base-image" >"$TMP/base.log" 2>&1; then
    say "FAIL containers: $SHARED/tools/podman-base-image failed:"; tail -5 "$TMP/base.log"; exit 1
fi
T_BASE=$(elapsed "$T0")

# Build from a snapshot of the tree: others edit it while we build, and the
# three targets must come from the same sources (and share the build stage).
CTX=$TMP/context
mkdir -p "$CTX"
tar -C "$SRC" --exclude=./.git --exclude='./build' --exclude='./build-*' \
    --exclude='__pycache__' --exclude='*.pyc' --exclude='*.o' -cf - . | tar -C "$CTX" -xf - ||
    { say "FAIL containers: cannot snapshot $SRC"; exit 1; }

build() { # build LOG [podman build options...]
    local log=$1; shift
    # --force-rm: no buildah working container is left behind when a step fails
    podman build --pull=never --force-rm "${PODMAN_LIMITS[@]}" -f "$CTX/docker/Dockerfile" "$@" "$CTX" >"$log" 2>&1
}
T0=$EPOCHREALTIME
if ! build "$TMP/build-stage.log" --target build -t "$TAG-build" ||
   ! build "$TMP/build-slim.log" --target slim -t "$TAG-slim" --iidfile "$TMP/slim.iid" ||
   ! build "$TMP/build-full.log" -t "$TAG" --iidfile "$TMP/full.iid"; then
    say "FAIL containers: podman build failed:"
    tail -25 "$(ls -t "$TMP"/build-*.log | head -1)"
    exit 1
fi
T_BUILD=$(elapsed "$T0")
# Run by image ID, not by tag: a tag can move under us, an ID cannot.
IMAGE=$(cat "$TMP/full.iid")
SLIM=$(cat "$TMP/slim.iid")
NCACHED=$(cat "$TMP"/build-*.log | grep -c 'Using cache')
NSTEPS=$(cat "$TMP"/build-*.log | grep -c 'STEP ')
prune_images
say "build: base image ${T_BASE}s, podman build ${T_BUILD}s ($NCACHED of $NSTEPS steps cached)"

# ------------------------------------------------------------------ host reference
# The memory job's program: static, so the same binary runs on the host and
# in the image (mounted at /h, first in PATH there too).
mkdir -p "$TMP/bin"
if ! cc -static -O2 -o "$TMP/bin/fitrun-test-memhog" "$HERE/exec/memhog.c" 2>"$TMP/memhog.log"; then
    say "FAIL containers: cannot build memhog.c (cc -static): $(head -3 "$TMP/memhog.log")"; exit 1
fi
EXEC_JOBS=$HERE/exec/jobs.jsonl
EXEC_INI=$HERE/exec/exec.ini
SAMPLE_JOBS=$SRC/samples/arc/jobs.jsonl
SAMPLE_INI=$SRC/profiles/arc-python.ini
HAVE_SAMPLE=0
[ -f "$SAMPLE_JOBS" ] && [ -f "$SAMPLE_INI" ] && HAVE_SAMPLE=1

HOST=$TMP/host
mkdir -p "$HOST"
T0=$EPOCHREALTIME
host_fail=()
# The jobs run under per-slot uids and Landlock: they must be able to reach
# the memory job's program (mktemp made $TMP 0700), and read its folder.
chmod 755 "$TMP"
# The shapes' cgroup trees are read-only (no cgroups of fitrun's own: memory
# is RLIMIT_AS), and the reference must be the same fallback: under a memory
# cgroup memhog, which reserves far more than it touches, is ok.
NOCG=(--set resources.cgroups=off)
PATH=$TMP/bin:$PATH "$FITRUN" run --profile "$EXEC_INI" --jobs "$EXEC_JOBS" --out "$HOST/exec.jsonl" \
    --set sandbox.read="/proc,$TMP/bin" "${NOCG[@]}" 2>"$HOST/exec.err"
rc=$?
[ $rc = 0 ] || host_fail+=("fitrun run (exec jobs) exited $rc: $(tail -2 "$HOST/exec.err" | tr '\n' ' ')")
if [ $rc = 0 ]; then
    out=$("${CHECK[@]}" expect "$HOST/exec.jsonl" "$HERE/exec/expect.txt" 2>&1) || host_fail+=("$out")
fi
if [ $HAVE_SAMPLE = 1 ]; then
    "$FITRUN" run --profile "$SAMPLE_INI" --jobs "$SAMPLE_JOBS" --out "$HOST/sample.jsonl" "${NOCG[@]}" 2>"$HOST/sample.err"
    rc=$?
    [ $rc = 0 ] || host_fail+=("fitrun run (ARC sample) exited $rc: $(tail -2 "$HOST/sample.err" | tr '\n' ' ')")
fi
# fitrun's own seccomp filters on the host (the container default profile adds one)
HOST_FILTERS=$("${CHECK[@]}" field "$HOST/exec.jsonl" ok-seccomp stdout 2>/dev/null |
               sed -n 's/^Seccomp_filters:[[:space:]]*//p')
report host "$T0" "${host_fail[@]}"
[ $HAVE_SAMPLE = 1 ] || say "note: samples/arc/jobs.jsonl or profiles/arc-python.ini not in the tree: exec jobs only"

# ------------------------------------------------------------------ shapes
NCPU=$(getconf _NPROCESSORS_ONLN)
MIB=$((1 << 20))

# check_rc DIR STEP — the step ran and exited 0 (appends to the caller's fails)
check_rc() {
    local rc
    rc=$(cat "$1/$2.rc" 2>/dev/null || echo missing)
    [ "$rc" = 0 ] && return 0
    fails+=("$2: exit status $rc: $(tail -c 300 "$1/$2.err" 2>/dev/null | tr '\n' ' ')")
    return 1
}
# check_plan STDERR N — `fitrun run` logged "plan: N worker(s) ..." (the pool's size)
check_plan() {
    [ -n "$2" ] || return 0
    local got
    got=$(sed -n 's/.*plan: \([0-9][0-9]*\) worker.*/\1/p' "$1" | head -1)
    [ "$got" = "$2" ] || fails+=("fitrun run: plan of ${got:-?} workers, expected $2: $(grep -m1 'plan:' "$1")")
}
check() { # check LABEL check.py-args... — run check.py, collect its messages
    local label=$1 out; shift
    out=$("${CHECK[@]}" "$@" 2>&1) || fails+=("$label: $out")
}

# shape NAME "PODMAN FLAGS" [filters=N] [sample=0] [workers=N] -- DETECT-EXPR...
#   filters=N  expected Seccomp_filters inside a job (default: host + 1, the
#              container's default profile stacked under fitrun's filter)
#   workers=N  expected pool size of `fitrun run --profile exec.ini` (its plan line)
#   wrap=N     expected FITRUN_WORKERS exported by the wrapper
#   mode=N     expected "Seccomp: N" of the container's own processes
#   sample=0   do not run the ARC sample in this shape
#   cpus=N     the shape needs N online CPUs (SKIP on a smaller machine)
shape() {
    local name=$1 flags=$2; shift 2
    wanted "$name" || return 0
    local filters=$((${HOST_FILTERS:-0} + 1)) sample=$HAVE_SAMPLE pworkers='' mode='' wrap=
    while (($#)) && [ "$1" != -- ]; do
        case $1 in
        cpus=*) if ((NCPU < ${1#cpus=})); then skip "$name" "needs ${1#cpus=} CPUs, this machine has $NCPU"; return 0; fi ;;
        mode=*) mode=${1#mode=} ;;
        wrap=*) wrap=workers=${1#wrap=} ;;
        filters=*) filters=$((${HOST_FILTERS:-0} + ${1#filters=})) ;;
        sample=*) [ "${1#sample=}" = 0 ] && sample=0 ;;
        workers=*) pworkers=${1#workers=} ;;
        esac
        shift
    done
    shift
    local d=$TMP/$name t0=$EPOCHREALTIME fails=() rc
    mkdir -p "$d"
    # shellcheck disable=SC2086  # $flags is a list of podman options
    "${RUN[@]}" --name "$NAME-${name//[^a-zA-Z0-9_.-]/-}" $flags -e FITRUN_TEST_SAMPLE=$sample \
        -v "$HERE:/t:ro" -v "$TMP/bin:/h:ro" -v "$d:/out" --entrypoint /bin/sh "$IMAGE" /t/inside.sh \
        >"$d/podman.out" 2>"$d/podman.err"
    rc=$?
    [ $rc = 0 ] || fails+=("podman run exited $rc: $(tail -3 "$d/podman.err" | tr '\n' ' ')")
    if [ -n "$mode" ] && ! grep -q "^Seccomp:[[:space:]]*$mode\$" "$d/seccomp.txt"; then
        fails+=("seccomp: the container's processes have $(head -1 "$d/seccomp.txt" 2>/dev/null), expected Seccomp: $mode")
    fi
    if check_rc "$d" detect; then
        # podman mounts every shape's cgroup tree read-only here: fitrun
        # makes no cgroups of its own, and says why (run-cgroups.sh has
        # the writable shape).
        check "detect --json" detect "$d/detect.out" cgroup.version=1 cgroup.delegated=false \
            "cgroup.delegated_reason~mounted read-only" sandbox.memory.enforced_by=RLIMIT_AS "$@"
    fi
    if check_rc "$d" env && [ -s "$d/detect.out" ]; then
        check "fitrun -- env" env "$d/env.out" "$d/detect.out" ${wrap:+"$wrap"}
    fi
    if check_rc "$d" exec; then
        check_plan "$d/exec.err" "$pworkers"
        check "exec jobs" results "$EXEC_JOBS" "$d/exec.jsonl"
        check "exec jobs" expect "$d/exec.jsonl" "$HERE/exec/expect.txt"
        check "exec jobs" compare host "$HOST/exec.jsonl" "$name" "$d/exec.jsonl"
        local got
        got=$("${CHECK[@]}" field "$d/exec.jsonl" ok-seccomp stdout 2>/dev/null |
              sed -n 's/^Seccomp_filters:[[:space:]]*//p')
        [ "$got" = "$filters" ] ||
            fails+=("seccomp: a job sees Seccomp_filters ${got:-?}, expected $filters (host ${HOST_FILTERS:-?})")
    fi
    if [ "$sample" = 1 ] && check_rc "$d" sample; then
        check "ARC sample" results "$SAMPLE_JOBS" "$d/sample.jsonl"
        check "ARC sample" compare host "$HOST/sample.jsonl" "$name" "$d/sample.jsonl"
    fi
    report "$name" "$t0" "${fails[@]}"
}

shape none "" workers="$NCPU" -- \
    cpu.online="$NCPU" cpu.affinity="$NCPU" cpu.quota=null cpu.effective="$NCPU" \
    memory.limit=null shm.size'>=1' "shm.size<=$((64 * MIB))" plan.workers="$NCPU"
shape cpus-0.5 "--cpus=0.5" workers=1 -- \
    cpu.quota=0.5 cpu.quota_source~cfs_quota_us cpu.effective=0.5 plan.workers=1
shape cpus-1.5 "--cpus=1.5" cpus=2 workers=1 -- \
    cpu.quota=1.5 cpu.effective=1.5 plan.workers=1
shape cpuset-1 "--cpuset-cpus=1" cpus=2 workers=1 -- \
    cpu.affinity=1 cpu.quota=null cpu.effective=1 plan.workers=1
shape cpus-0.5-cpuset-0,1 "--cpus=0.5 --cpuset-cpus=0,1" cpus=2 workers=1 -- \
    cpu.affinity=2 cpu.quota=0.5 cpu.effective=0.5 plan.workers=1
# exec.ini asks 200M per worker, the default profile (used by detect and the
# wrapper alike) 512M: a 256 MiB container fits one worker either way
shape memory-256m "--memory=256m" workers=1 wrap=1 -- \
    memory.limit=$((256 * MIB)) memory.limit_source~memory.limit_in_bytes plan.workers=1
shape pids-64 "--pids-limit=64" workers="$NCPU" -- \
    pids.limit=64 pids.current'>=1' pids.current'<=32'
# /dev/shm below 2 GiB: the wrapper points JOBLIB_TEMP_FOLDER at disk (check.py env)
shape shm-64m "--shm-size=64m" -- "shm.size=$((64 * MIB))"
shape shm-4g "--shm-size=4g" sample=0 -- "shm.size=$((4096 * MIB))"
shape seccomp-default "--security-opt seccomp=/usr/share/containers/seccomp.json" mode=2 -- cpu.quota=null
# control: without the container's profile a job sees only fitrun's filters
shape seccomp-unconfined "--security-opt seccomp=unconfined" filters=0 mode=0 sample=0 -- cpu.quota=null
# HTCondor limits CPUs with cgroup shares, so a job in a container on a big
# node sees no quota at all: the machine ad is the only honest number.
cat >"$TMP/machine_ad" <<'AD'
Name = "slot1_1@node042.example.org"
SlotType = "Dynamic"
Cpus = 1
Memory = 2048
Disk = 1048576
AD
shape htcondor "-e _CONDOR_MACHINE_AD=/etc/condor/machine_ad -v $TMP/machine_ad:/etc/condor/machine_ad:ro" workers=1 -- \
    cpu.quota=null cpu.scheduler=1 cpu.scheduler_source~machine_ad cpu.effective=1 plan.workers=1

# ------------------------------------------------------------------ fitrun as PID 1
# podman stop sends SIGTERM to PID 1 (fitrun), which must hand it to the
# command; the command records it and dies of it, the container exits 143
# well before podman's SIGKILL (GRACE seconds later, which would give 137).
pid1_sigterm() {
    local name=pid1-sigterm d=$TMP/pid1-sigterm t0=$EPOCHREALTIME fails=() rc pid i ts
    wanted $name || return 0
    mkdir -p "$d"
    "${RUN[@]}" --name "$NAME-$name" -v "$HERE:/t:ro" -v "$d:/out" "$IMAGE" /t/pid1-signal.sh \
        >"$d/podman.out" 2>"$d/podman.err" &
    pid=$!
    BGPIDS+=("$pid")
    for ((i = 0; i < 600; i++)); do
        [ -e "$d/ready" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ ! -e "$d/ready" ]; then
        fails+=("the wrapped command never started: $(tail -3 "$d/podman.err" | tr '\n' ' ')")
        podman rm -f -t 0 "$NAME-$name" >/dev/null 2>&1
        wait "$pid"
    else
        ts=$EPOCHREALTIME
        podman stop -t "$GRACE" "$NAME-$name" >"$d/stop.out" 2>&1
        wait "$pid"
        rc=$?
        local took
        took=$(elapsed "$ts")
        [ "$rc" = 143 ] || fails+=("container exit status $rc, expected 143 (stop took ${took}s): $(tail -3 "$d/podman.err" | tr '\n' ' ')")
        awk -v t="$took" -v g="$GRACE" 'BEGIN { exit !(t < g) }' ||
            fails+=("podman stop took ${took}s: not before the ${GRACE}s grace period")
        grep -qx TERM "$d/signals" 2>/dev/null ||
            fails+=("the wrapped command did not see SIGTERM (signals file: $(cat "$d/signals" 2>/dev/null))")
    fi
    [ "$(cat "$d/pid1" 2>/dev/null)" = fitrun ] ||
        fails+=("PID 1 in the container is '$(cat "$d/pid1" 2>/dev/null)', expected fitrun")
    report $name "$t0" "${fails[@]}"
}

# Orphans reparented to PID 1 must not stay zombies.
pid1_zombies() {
    local name=pid1-zombies d=$TMP/pid1-zombies t0=$EPOCHREALTIME fails=() rc
    wanted $name || return 0
    mkdir -p "$d"
    "${RUN[@]}" --name "$NAME-$name" -v "$HERE:/t:ro" -v "$d:/out" "$IMAGE" /t/pid1-zombies.sh \
        >"$d/podman.out" 2>"$d/podman.err"
    rc=$?
    [ $rc = 0 ] || fails+=("container exit status $rc: $(tail -3 "$d/podman.err" | tr '\n' ' ')")
    [ "$(wc -l <"$d/ppids" 2>/dev/null)" = 5 ] || fails+=("expected 5 orphans, got: $(cat "$d/ppids" 2>/dev/null)")
    if awk '$2 != 1 { bad = 1 } END { exit !bad }' "$d/ppids" 2>/dev/null; then
        fails+=("orphans not reparented to PID 1 (pid ppid): $(tr '\n' ';' <"$d/ppids")")
    fi
    [ "$(cat "$d/nzombies" 2>/dev/null)" = 0 ] ||
        fails+=("$(cat "$d/nzombies" 2>/dev/null || echo ?) zombies left: $(cat "$d/zombies" 2>/dev/null)")
    report $name "$t0" "${fails[@]}"
}

# Exit statuses through PID 1: the command's own, 128+n, 127 (not found).
exit_case() { # exit_case WANT CMD... (appends to the caller's fails)
    local want=$1 rc; shift
    "${RUN[@]}" --name "$NAME-pid1-exit" "$IMAGE" "$@" >/dev/null 2>"$TMP/pid1-exit.err"
    rc=$?
    [ "$rc" = "$want" ] ||
        fails+=("\`$*\`: exit status $rc, expected $want: $(tail -2 "$TMP/pid1-exit.err" | tr '\n' ' ')")
}
pid1_exit() {
    local t0=$EPOCHREALTIME fails=()
    wanted pid1-exit || return 0
    exit_case 7 sh -c 'exit 7'
    exit_case 137 sh -c 'kill -KILL $$'
    exit_case 127 /nonexistent/command
    report pid1-exit "$t0" "${fails[@]}"
}
pid1_sigterm
pid1_zombies
pid1_exit

# ------------------------------------------------------------------ the images as shipped
# The full image's default command (fitrun as PID 1 wrapping `fitrun run` of
# the sample) under a quota: complete results, the host's outcomes.
default_cmd() {
    local name=default-cmd d=$TMP/default-cmd t0=$EPOCHREALTIME fails=() rc
    wanted $name || return 0
    if [ $HAVE_SAMPLE = 0 ]; then skip $name "the ARC sample (samples/arc, profiles/arc-python.ini) is not in the tree"; return 0; fi
    mkdir -p "$d"
    "${RUN[@]}" --name "$NAME-$name" --cpus=1.5 "$IMAGE" >"$d/results.jsonl" 2>"$d/podman.err"
    rc=$?
    if [ $rc = 0 ]; then
        check "default command" results "$SAMPLE_JOBS" "$d/results.jsonl"
        check "default command" compare host "$HOST/sample.jsonl" $name "$d/results.jsonl"
    else
        fails+=("exit status $rc: $(tail -3 "$d/podman.err" | tr '\n' ' ')")
    fi
    report $name "$t0" "${fails[@]}"
}

# The slim image as a wrapper: no Python inside, fitrun is PID 1 and exports
# thread counts that fit --cpus=1.5 (one worker's worth: floor).
slim_wrapper() {
    local name=slim-wrapper d=$TMP/slim-wrapper t0=$EPOCHREALTIME fails=() rc
    wanted $name || return 0
    mkdir -p "$d"
    "${RUN[@]}" --name "$NAME-$name" --cpus=1.5 "$SLIM" \
        /bin/sh -c 'cat /proc/1/comm; test ! -e /usr/bin/python3 && echo no-python; env' \
        >"$d/out.txt" 2>"$d/podman.err"
    rc=$?
    [ $rc = 0 ] || fails+=("exit status $rc: $(tail -3 "$d/podman.err" | tr '\n' ' ')")
    [ "$(head -1 "$d/out.txt")" = fitrun ] || fails+=("PID 1 is '$(head -1 "$d/out.txt")', expected fitrun")
    grep -qx no-python "$d/out.txt" || fails+=("the slim image contains /usr/bin/python3")
    grep -qx FITRUN_WORKERS=1 "$d/out.txt" ||
        fails+=("FITRUN_WORKERS: expected 1 under --cpus=1.5, got '$(grep ^FITRUN_WORKERS= "$d/out.txt")'")
    grep -qx OMP_NUM_THREADS=1 "$d/out.txt" ||
        fails+=("OMP_NUM_THREADS: expected 1 under --cpus=1.5, got '$(grep ^OMP_NUM_THREADS= "$d/out.txt")'")
    "${RUN[@]}" --name "$NAME-$name" "$SLIM" >"$d/detect.txt" 2>&1 ||
        fails+=("default command (fitrun detect) failed: $(tail -2 "$d/detect.txt" | tr '\n' ' ')")
    report $name "$t0" "${fails[@]}"
}
# `podman stop` in the middle of the default command's batch: fitrun (PID 1)
# hands SIGTERM to `fitrun run`, which stops, keeps the results it has
# (valid JSON Lines, one per id at most) and exits 143.
stop_run() {
    local name=pid1-stop-run d=$TMP/pid1-stop-run t0=$EPOCHREALTIME fails=() rc pid i n total took ts
    wanted $name || return 0
    if [ $HAVE_SAMPLE = 0 ]; then skip $name "the ARC sample (samples/arc, profiles/arc-python.ini) is not in the tree"; return 0; fi
    mkdir -p "$d"
    "${RUN[@]}" --name "$NAME-$name" --cpus=0.5 "$IMAGE" >"$d/results.jsonl" 2>"$d/podman.err" &
    pid=$!
    BGPIDS+=("$pid")
    for ((i = 0; i < 600; i++)); do
        [ -s "$d/results.jsonl" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    ts=$EPOCHREALTIME
    podman stop -t "$GRACE" "$NAME-$name" >/dev/null 2>&1
    wait "$pid"
    rc=$?
    took=$(elapsed "$ts")
    n=$(grep -c . "$d/results.jsonl")
    total=$(grep -c . "$SAMPLE_JOBS")
    if ((n == 0)); then
        fails+=("no result was written before the stop (exit status $rc): $(tail -3 "$d/podman.err" | tr '\n' ' ')")
    elif ((n >= total)); then
        fails+=("the batch had finished before podman stop ($n results): nothing was interrupted")
    else
        [ "$rc" = 143 ] || fails+=("exit status $rc, expected 143 (stop took ${took}s): $(tail -3 "$d/podman.err" | tr '\n' ' ')")
        awk -v t="$took" -v g="$GRACE" 'BEGIN { exit !(t < g) }' ||
            fails+=("podman stop took ${took}s: not before the ${GRACE}s grace period")
        check "interrupted results" results "$SAMPLE_JOBS" "$d/results.jsonl" --partial
    fi
    report $name "$t0" "${fails[@]}"
}
default_cmd
stop_run
slim_wrapper

# ------------------------------------------------------------------ summary
left=$(podman ps -a --format '{{.Names}}' | grep -c "^$NAME-")
if [ "$left" != 0 ]; then
    NFAIL=$((NFAIL + 1)); FAILED+=(cleanup)
    say "FAIL cleanup: $left containers of this run still exist"
fi
say "containers: $NPASS passed, $NFAIL failed, $NSKIP skipped; base image ${T_BASE}s, build ${T_BUILD}s, total $(elapsed "$T_START")s"
if ((NFAIL)); then
    say "failed: ${FAILED[*]}"
    exit 1
fi
exit 0
