#!/usr/bin/env bash
# tests/v2vm/run-cgroups.sh — fitrun's own cgroups (docs/cgroups.md) in a
# REAL cgroup v2 hierarchy: ../shared/tools/cgroup-v2-vm boots a small VM
# (busybox userspace, pure cgroup v2, ~3-10 s) and runs guest.sh there once.
#
# In the guest:
#   - in `box` (which holds the VM's init too) fitrun's cgroup is not
#     delegated: detect says why, and a run with cgroups = require stops
#     with 125;
#   - in a cgroup `t` beside box that holds fitrun alone (what systemd's
#     Delegate=yes gives): delegated (memory, pids); 4 pairs of (a job
#     touching 3x its 100M limit, a sleeping neighbour), 2 workers: every
#     hog `memory` (OOMKill, read from its own memory.events), every
#     neighbour ok; the slot's files while a job runs (memory.max,
#     memory.swap.max 0, pids.max, memory.oom.group); nothing left behind
#     after a normal exit, after SIGTERM, and after
#     SIGKILL (fitrun's janitor removes the tree within 1 s, and holds none
#     of fitrun's output descriptors); t's cgroup.subtree_control as it
#     was, and t takes new processes again.
# The guest prints `ok - NAME` / `not ok - NAME` lines; this script passes
# when every expected name is ok. Exec jobs only (the VM has no Python):
# busybox dd with a 300M block touches the memory (preset none: the exec
# preset refuses dd's opens; run_alloc's malloc+memset may be optimised away).
# Env: FITRUN, FITRUN_SHARED (ctest sets them). Without root
# and without qemu: SKIP, exit 0.
set -uo pipefail

# shellcheck source=common.bash
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"
v2vm_require cgroups

P=$(mktemp -d /tmp/fitrun-test-v2vm-cgroups.XXXXXX)
trap 'rm -rf "$P"' EXIT
cp "$FITRUN" "$P/" || exit 1
cat > "$P/run" << 'GUEST'
#!/bin/sh
# Runs in the VM, in /payload.
CG=/sys/fs/cgroup
ok() { if "$@"; then echo "ok - $NAME"; else echo "not ok - $NAME"; fi; }
# A && B; verdict: the same for a list (`ok A && B` would pass on A alone).
verdict() { if [ $? = 0 ]; then echo "ok - $NAME"; else echo "not ok - $NAME"; fi; }
# alone CMD...: a shell that moves itself into $CG/t, then execs CMD (so
# CMD keeps the shell's pid: `alone ... &` then $! is CMD's).
ALONE='echo $$ > /sys/fs/cgroup/t/cgroup.procs && exec "$@"'
alone() { sh -c "$ALONE" alone "$@"; }
left() { ls -d $CG/t/fitrun-* 2> /dev/null; }

./fitrun detect --json > box.json
NAME="box: not delegated, and why"
grep -q '"delegated": false' box.json && grep -q '"delegated_reason": "not memory, pids: /sys/fs/cgroup/box holds [0-9]* other processes' box.json; verdict
echo '{"id":"a","argv":["true"]}' > one.jsonl
./fitrun run --quiet --set resources.cgroups=require --jobs one.jsonl --out req.jsonl 2> req.err
rc=$?
NAME="box: cgroups = require stops with 125"
ok [ $rc = 125 ]

mkdir $CG/t && echo 400000000 > $CG/t/memory.max
before=$(cat $CG/t/cgroup.subtree_control)
alone ./fitrun detect --json > t.json
NAME="t: delegated: memory, pids (cgroup v2)"
grep -q '"delegated": true' t.json && grep -q '"delegated_reason": "memory, pids (cgroup v2)"' t.json; verdict

: > jobs.jsonl
for i in 1 2 3 4; do
    echo "{\"id\":\"hog$i\",\"argv\":[\"dd\",\"if=/dev/zero\",\"of=/dev/null\",\"bs=300M\",\"count=1\"]}" >> jobs.jsonl
    echo "{\"id\":\"nap$i\",\"argv\":[\"sleep\",\"0.3\"]}" >> jobs.jsonl
done
alone ./fitrun run --quiet --preset none --workers 2 --memory 100M --jobs jobs.jsonl --out out.jsonl
NAME="t: 4 hogs memory (OOMKill from their memory.events)"
ok [ "$(grep '"id":"hog' out.jsonl | grep '"status":"memory"' | grep '"error_type":"OOMKill"' | grep -c '/jobs/worker-[01]/memory.events')" = 4 ]
NAME="t: 4 neighbours ok"
ok [ "$(grep '"id":"nap' out.jsonl | grep -c '"status":"ok"')" = 4 ]
NAME="t: nothing left after a normal exit; subtree_control as before"
[ -z "$(left)" ] && [ "$(cat $CG/t/cgroup.subtree_control)" = "$before" ]; verdict

echo '{"id":"s1","argv":["sleep","30"]}' > slow.jsonl
echo '{"id":"s2","argv":["sleep","30"]}' >> slow.jsonl
sh -c "$ALONE" alone ./fitrun run --quiet --workers 2 --memory 64M --set sandbox.processes=3 --jobs slow.jsonl --out slow.out &
pid=$!
i=0
while [ $i -lt 100 ] && ! grep -q . $CG/t/fitrun-$pid/jobs/worker-1/cgroup.procs 2> /dev/null; do sleep 0.1; i=$((i + 1)); done
W=$CG/t/fitrun-$pid/jobs/worker-0
NAME="t: the slot's limits: memory.max, memory.swap.max 0, pids.max, memory.oom.group"
ok [ "$(cat $W/memory.max) $(cat $W/memory.swap.max) $(cat $W/pids.max) $(cat $W/memory.oom.group)" = "67108864 0 4 1" ]
NAME="t: fitrun is in its launcher cgroup"
ok grep -qx "$pid" $CG/t/fitrun-$pid/launcher/cgroup.procs
kill -TERM $pid
wait $pid
rc=$?
NAME="t: SIGTERM: exit 143, nothing left"
[ $rc = 143 ] && [ -z "$(left)" ] && [ "$(cat $CG/t/cgroup.subtree_control)" = "$before" ]; verdict

# A job that ends first: the pool's orphan sweep after it leaves the janitor alone.
{ echo '{"id":"q","argv":["true"]}'; cat slow.jsonl; } > slow2.jsonl
# Its stdout and stderr are one pipe, its --ready-fd another: readers read each to its end.
mkfifo ready.fifo
{ cat ready.fifo > ready.txt; : > ready.eof; } &
{ sh -c "$ALONE" alone ./fitrun run --quiet --workers 2 --jobs slow2.jsonl --out slow2.out --ready-fd 3 3> ready.fifo 2>&1 &
  echo $! > slow2.pid; } | { cat > slow2.err; : > slow2.eof; } &
sleep 0.2
pid=$(cat slow2.pid)
i=0
while [ $i -lt 100 ] && [ "$(grep -c '"status":"ok"' slow2.out 2> /dev/null)" != 1 ]; do sleep 0.1; i=$((i + 1)); done
while [ $i -lt 100 ] && [ "$(cat $CG/t/fitrun-$pid/jobs/worker-*/cgroup.procs 2> /dev/null | wc -l)" -lt 4 ]; do sleep 0.1; i=$((i + 1)); done
# The janitor: the launcher cgroup's other process (the exec runtime has no zygote).
j=$(grep -vx "$pid" $CG/t/fitrun-$pid/launcher/cgroup.procs)
fds() { for f in /proc/$j/fd/*; do readlink $f; done; }
NAME="t: the janitor holds only /dev/null, its pipe and its signalfd (not fitrun's output pipe), in a process group of its own"
out=$(readlink /proc/$pid/fd/1)
[ -n "$j" ] && [ "$(fds | grep -cv -e '^/dev/null$' -e '^pipe:' -e '^anon_inode:\[signalfd\]$')" = 0 ] && [ "$(fds | grep -c '^pipe:')" = 1 ] && ! fds | grep -qx "$out" && [ "$(cut -d' ' -f5 /proc/$j/stat)" = "$j" ]; verdict
NAME="t: the ready fd's reader sees its end while fitrun runs (the janitor does not hold it)"
[ -e ready.eof ] && grep -q '"ready":true' ready.txt; verdict
kill -KILL $pid
# Without it, the tree would stay and t would refuse every new process
# (EBUSY: t passes controllers to its children); the janitor removes it.
i=0
while [ $i -lt 20 ] && [ -n "$(left)" ]; do sleep 0.05; i=$((i + 1)); done
echo "# SIGKILL: tree gone after about $((i * 50)) ms"
NAME="t: SIGKILL: within 1 s the janitor removed the tree; subtree_control as before"
[ -z "$(left)" ] && [ "$(cat $CG/t/cgroup.subtree_control)" = "$before" ]; verdict
i=0
while [ $i -lt 20 ] && [ ! -e slow2.eof ]; do sleep 0.05; i=$((i + 1)); done
NAME="t: SIGKILL: the reader of fitrun's stdout and stderr sees their end within 1 s"
ok [ -e slow2.eof ]
sleep 0.5
NAME="t: the dead run's jobs and its janitor are gone"
[ -z "$(ps -o pid,args 2> /dev/null | grep 'sleep 30' | grep -v grep)" ] && [ ! -e /proc/$j ]; verdict
NAME="t: after SIGKILL a new process can join t"
ok sh -c 'echo $$ > /sys/fs/cgroup/t/cgroup.procs'
alone ./fitrun run --quiet --workers 1 --jobs one.jsonl --out next.jsonl 2> next.err
NAME="t: the next run runs and leaves nothing"
[ -z "$(left)" ] && grep -q '"status":"ok"' next.jsonl && [ "$(cat $CG/t/cgroup.subtree_control)" = "$before" ]; verdict
cat next.err slow2.err req.err >&2
grep "\"id\":\"hog" out.jsonl >&2
GUEST
chmod +x "$P/run"

out=$("$VM" --mem-max 536870912 --pids-max 256 "$P")
rc=$?
printf '%s\n' "$out"
if [ "$rc" != 0 ]; then
    echo "FAIL v2vm cgroups: the VM exited $rc"
    exit 1
fi
want=16
got=$(grep -c '^ok - ' <<< "$out")
if grep -q '^not ok' <<< "$out" || [ "$got" != "$want" ]; then
    echo "FAIL v2vm cgroups: $got of $want ok"
    exit 1
fi
echo "PASS v2vm cgroups: $got of $want"
