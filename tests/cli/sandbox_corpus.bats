#!/usr/bin/env bats
# The Python half of the sandbox's hostile corpus (tests/corpus/): every
# snippet runs in a forked child of /usr/bin/python3 (numpy imported, like
# the warm runtime's workers) under build/lib/libfitrun_sandbox.so loaded
# with ctypes, and must get exactly its declared outcome — twice: through
# the relay (fr_policy_apply) and with the parent as the supervisor
# (fr_policy_apply_notify, fr_notify_receive, fr_notify_read: the warm
# runtime's worker protocol). Least-privilege snippets build their policy
# with fr_policy_build_paths and the interpreter's own tree. The C half is
# tests/unit/test_sandbox_hostile.c and test_sandbox_least.c.

setup() {
    LIB="$FITRUN_BUILD/lib/libfitrun_sandbox.so"
    DRIVER="$FITRUN_SRC/tests/corpus/run_python_corpus.py"
}

@test "libfitrun_sandbox.so loads alone and exports the contract" {
    run /usr/bin/python3 -c '
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
for f in ("fr_policy_build_kv", "fr_policy_apply", "fr_policy_free", "fr_report_read",
          "fr_classify", "fr_policy_describe", "fr_status_name", "fr_policy_build_paths",
          "fr_policy_apply_slot", "fr_policy_apply_notify", "fr_notify_receive", "fr_notify_read",
          "fr_policy_prepare_worker", "fr_landlock_abi", "fr_policy_fd"):
    getattr(lib, f)
print("ok")' "$LIB"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "ok" ]
}

@test "a bad policy string is an error naming the key" {
    run /usr/bin/python3 -c '
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
err = ctypes.create_string_buffer(256)
pol = ctypes.c_void_p()
rc = lib.fr_policy_build_kv(b"preset=python;cpu_tme=1s", ctypes.byref(pol), err, 256)
print(rc, err.value.decode())' "$LIB"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == "-1 sandbox kv item 2: unknown key 'cpu_tme'"* ]]
}

@test "python corpus: every snippet gets its expected outcome" {
    run /usr/bin/python3 "$DRIVER" --lib "$LIB"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *" snippets as expected" ]]
    [[ "$output" == *"ok   forge_violation [notify]"* ]]
    [[ "$output" == *"ok   ok_numpy_landlock [notify]"* ]]
    # No job outlived the run (`! cmd` would not fail a bats test: use run).
    run pgrep -f "run_python_corpus.py"
    [ "$status" -eq 1 ]
}

@test "torch: a CPU matmul under the python preset, where torch is installed" {
    /usr/bin/python3 -c 'import torch' 2>/dev/null || skip "torch is not importable by /usr/bin/python3"
    run /usr/bin/python3 "$DRIVER" --lib "$LIB" -v ok_torch
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"ok   ok_torch [relay]"* ]]
    [[ "$output" == *"ok   ok_torch [notify]"* ]]
}
