#!/usr/bin/env bats
# detect_special_files.bats — detection reads only regular files, and never
# blocks opening one. A sysroot is untrusted input: a FIFO, a device that
# never ends (/dev/zero), a directory or a socket where a /proc or cgroup
# file was expected must give a note and an answer at once, never a hang
# or an unbounded read. Each case copies a fixture tree and plants one
# special file in it; `timeout` turns a hang into a failure.

FIXTURES=$FITRUN_SRC/tests/fixtures
LEAF=sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/app-fitrun-1234.scope

setup() {
    ROOT=$BATS_TEST_TMPDIR/root
    cp -r "$FIXTURES/v2-host" "$ROOT"
}

# plant KIND PATH: replace ROOT/PATH with a special file of KIND.
plant() {
    local path=$ROOT/$2
    rm -rf "$path"
    case $1 in
    fifo) mkfifo "$path" ;;
    dir) mkdir "$path" ;;
    zero) ln -s /dev/zero "$path" ;;
    urandom) ln -s /dev/urandom "$path" ;;
    socket) # bound from its directory: a long absolute path does not fit sun_path
        (cd "$(dirname "$path")" && /usr/bin/python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$(basename "$path")") ;;
    esac
}

detect_json() {
    run timeout 10 env -i "$FITRUN" detect --json --sysroot "$ROOT"
    [ "$status" -eq 0 ] # 124 = timeout: detection hung
}

# note_has TEXT: some note of $output contains TEXT.
note_has() {
    JSON=$output /usr/bin/python3 -c '
import json, os, sys
notes = json.loads(os.environ["JSON"])["notes"]
sys.exit(0 if any(sys.argv[1] in n for n in notes) else "no note with %r in %r" % (sys.argv[1], notes))
' "$1"
}

@test "a FIFO as proc/self/mountinfo: noted, no hang" {
    plant fifo proc/self/mountinfo
    detect_json
    note_has "mounts: /proc/self/mountinfo: not a regular file (a FIFO, device or socket): ignored"
}

@test "a FIFO as proc/self/mountinfo, text report: no hang" {
    plant fifo proc/self/mountinfo
    run timeout 10 env -i "$FITRUN" detect --sysroot "$ROOT"
    [ "$status" -eq 0 ]
    [[ $output == *"/proc/self/mountinfo: not a regular file"* ]]
}

@test "/dev/zero as proc/self/cgroup and proc/meminfo: refused, not read" {
    plant zero proc/self/cgroup
    plant urandom proc/meminfo
    detect_json
    note_has "cgroups: /proc/self/cgroup: not a regular file"
    note_has "/proc/meminfo: not a regular file"
}

@test "a directory as proc/self/status: noted" {
    plant dir proc/self/status
    detect_json
    note_has "/proc/self/status: a directory, not a regular file"
}

@test "special files as cgroup limit files: noted, the other levels still read" {
    plant fifo "$LEAF/cpu.max"
    plant socket "$LEAF/memory.max"
    plant zero "$LEAF/pids.max"
    detect_json
    note_has "cpu quota: /$LEAF/cpu.max: not a regular file"
    note_has "app-fitrun-1234.scope/memory.max: No such device or address: ignored" # open(2) refuses a socket
    note_has "app-fitrun-1234.scope/pids.max: not a regular file"
}

@test "a FIFO as the HTCondor machine ad: noted, no hang" {
    mkfifo "$ROOT/machine.ad" # an absolute path is read under the sysroot
    run timeout 10 env -i _CONDOR_MACHINE_AD=/machine.ad "$FITRUN" detect --json --sysroot "$ROOT"
    [ "$status" -eq 0 ]
    note_has "cannot read: not a regular file"
}

@test "a FIFO as the profile: 125 naming it, no hang" {
    mkfifo "$BATS_TEST_TMPDIR/p.ini"
    run timeout 10 "$FITRUN" detect --profile "$BATS_TEST_TMPDIR/p.ini"
    [ "$status" -eq 125 ]
    [[ $output == *"cannot read profile $BATS_TEST_TMPDIR/p.ini: not a regular file"* ]]
}

@test "control characters read from a sysroot are shown, not sent, in the table" {
    printf '\033]0;owned\007\n' > "$ROOT/$LEAF/memory.max"
    run timeout 10 env -i "$FITRUN" detect --sysroot "$ROOT"
    [ "$status" -eq 0 ]
    printf '%s' "$output" > "$BATS_TEST_TMPDIR/table.txt"
    [[ $output == *"memory.max: garbage '"'\x1b]0;owned\x07'"': ignored"* ]]
    ! grep -q $'\033' "$BATS_TEST_TMPDIR/table.txt" || false
    ! grep -q $'\007' "$BATS_TEST_TMPDIR/table.txt" || false
}
