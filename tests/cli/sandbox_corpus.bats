#!/usr/bin/env bats
# The Python half of the sandbox's hostile corpus (tests/corpus/): every
# snippet runs in a forked child of /usr/bin/python3 (numpy imported, like
# the warm runtime's workers) under build/lib/libfitrun_sandbox.so loaded
# with ctypes, and must get exactly its declared outcome — twice: through
# the relay (fr_policy_apply) and with the parent as the supervisor
# (fr_policy_apply_notify, fr_notify_receive, fr_notify_read: the warm
# runtime's worker protocol). Policies are packed by fitrun's key table
# (build/tests/helpers/policy_pack) and built with fr_policy_build_packed,
# the least-privilege snippets' with the interpreter's own tree added, as
# the warm runtime's zygote does. The C half is
# tests/unit/test_sandbox_hostile.c and test_sandbox_least.c.

setup() {
    LIB="$FITRUN_BUILD/lib/libfitrun_sandbox.so"
    DRIVER="$FITRUN_SRC/tests/corpus/run_python_corpus.py"
}

@test "libfitrun_sandbox.so loads alone and exports the contract" {
    run /usr/bin/python3 -c '
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
for f in ("fr_policy_build_packed", "fr_policy_apply", "fr_policy_free", "fr_report_read",
          "fr_policy_describe", "fr_syscall_name", "fr_signal_name", "fr_policy_spec_pack",
          "fr_policy_apply_slot", "fr_policy_apply_notify", "fr_notify_receive", "fr_notify_read",
          "fr_policy_prepare_worker", "fr_landlock_abi", "fr_policy_fd"):
    getattr(lib, f)
# facts only: no text parsing, no classification
for f in ("fr_policy_build_kv", "fr_classify", "fr_status_name", "fr_parse_size"):
    assert not hasattr(lib, f), f
print("ok")' "$LIB"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "ok" ]
}

@test "a packed spec builds through ctypes; a bad one is an error, not a crash" {
    "$FITRUN_BUILD/tests/helpers/policy_pack" 'preset=python;cpu_time=1s;allow=socket' > "$BATS_TEST_TMPDIR/spec"
    run /usr/bin/python3 -c '
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.fr_policy_build_packed.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_char_p, ctypes.c_size_t]
lib.fr_policy_describe.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
spec = open(sys.argv[2], "rb").read()
err, out = ctypes.create_string_buffer(256), ctypes.create_string_buffer(512)
pol = ctypes.c_void_p()
print(lib.fr_policy_build_packed(spec, len(spec), None, ctypes.byref(pol), err, 256))
lib.fr_policy_describe(pol, out, 512)
print(out.value.decode())
print(lib.fr_policy_build_packed(spec[:-3], len(spec) - 3, None, ctypes.byref(pol), err, 256), err.value.decode())
' "$LIB" "$BATS_TEST_TMPDIR/spec"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = 0 ]
    [[ "${lines[1]}" == "preset=python seccomp=notify("*" cpu=1s(hard 2s) "*"allow=socket"* ]]
    [[ "${lines[2]}" == "-1 sandbox: packed spec: "* ]]
    run "$FITRUN_BUILD/tests/helpers/policy_pack" 'preset=python;cpu_tme=1s'
    [ "$status" -eq 2 ]
    [[ "$output" == *"sandbox text item 2: unknown key 'cpu_tme'"* ]]
}

@test "python corpus: every snippet gets its expected outcome" {
    run /usr/bin/python3 "$DRIVER" --build "$FITRUN_BUILD"
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
    run /usr/bin/python3 "$DRIVER" --build "$FITRUN_BUILD" -v ok_torch
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"ok   ok_torch [relay]"* ]]
    [[ "$output" == *"ok   ok_torch [notify]"* ]]
}
