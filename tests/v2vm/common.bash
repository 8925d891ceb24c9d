# tests/v2vm/common.bash — sourced by the run-*.sh suites that boot the
# cgroup v2 VM: where the sources, ../shared, fitrun and the VM tool are
# (FITRUN_SRC, FITRUN_SHARED, FITRUN override them; ctest sets them), and
# v2vm_require, the check every suite makes first.

SRC=${FITRUN_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SHARED=${FITRUN_SHARED:-$SRC/../shared}
FITRUN=${FITRUN:-$SRC/build/fitrun}
VM=$SHARED/tools/cgroup-v2-vm

# v2vm_require NAME: without root and without qemu the VM cannot run:
# SKIP and exit 0; without the fitrun binary or the VM tool: FAIL, exit 1.
v2vm_require() {
    if [ "$(id -u)" != 0 ] && ! command -v qemu-system-x86_64 > /dev/null; then
        echo "SKIP v2vm $1: not root and qemu-system-x86 is not installed (the VM tool needs one of them)"
        exit 0
    fi
    [ -x "$FITRUN" ] || { echo "FAIL v2vm $1: no fitrun binary at $FITRUN (build first)"; exit 1; }
    [ -x "$VM" ] || { echo "FAIL v2vm $1: $VM not found"; exit 1; }
}
