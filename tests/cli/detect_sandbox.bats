#!/usr/bin/env bats
# fitrun detect, key sandbox: what a job of the profile gets on this machine
# (seccomp, Landlock, no_new_privs, identity, capabilities), and why not
# where it does not.

load run_common

setup() { run_setup; }
teardown() { run_teardown; }

@test "detect --json reports the sandbox of the built-in profile" {
    run -0 "$FITRUN" detect --json
    local sb
    sb=$(jq -c .sandbox <<< "$output")
    [ "$(jq -r .preset <<< "$sb")" = exec ]
    [ "$(jq -r .seccomp.mode <<< "$sb")" = notify ]
    [ "$(jq -r .seccomp.instructions <<< "$sb")" -gt 100 ]
    [ "$(jq -r .no_new_privs <<< "$sb")" = true ]
    [ "$(jq -r .landlock.base <<< "$sb")" = system ]
    [ "$(jq -r '.capabilities.kept | length' <<< "$sb")" = 0 ]
    local abi
    abi=$(jq -r .landlock.abi <<< "$sb")
    if [ "$abi" -gt 0 ]; then
        [ "$(jq -r .landlock.enforced <<< "$sb")" = true ]
        [ "$(jq -r .landlock.why_not <<< "$sb")" = null ]
    else
        [ "$(jq -r .landlock.enforced <<< "$sb")" = false ]
        [ "$(jq -r .landlock.why_not <<< "$sb")" != null ]
    fi
    if [ "$(id -u)" = 0 ]; then
        [ "$(jq -r .identity.enforced <<< "$sb")" = true ]
        [ "$(jq -r .identity.uid_first <<< "$sb")" = 60000 ]
        workers=$(jq -r .plan.workers <<< "$output")
        [ "$(jq -r .identity.uid_last <<< "$sb")" = $((60000 + workers - 1)) ]
    else
        [ "$(jq -r .identity.enforced <<< "$sb")" = false ]
        [[ "$(jq -r .identity.why_not <<< "$sb")" == "fitrun is not root"* ]]
    fi
}

@test "detect --profile: the profile's sandbox, and why not" {
    cat > p.ini <<'INI'
[resources]
workers = 3
[sandbox]
user = root
keep_caps = cap_net_raw
read = /usr/share/doc
require_landlock = false
[runtime]
kind = exec
INI
    run -0 "$FITRUN" detect --json --profile p.ini
    [ "$(jq -r .sandbox.identity.enforced <<< "$output")" = false ]
    [ "$(jq -r .sandbox.identity.why_not <<< "$output")" = "user = root: jobs keep fitrun's identity" ]
    [ "$(jq -c .sandbox.capabilities.kept <<< "$output")" = '["cap_net_raw"]' ]
    [ "$(jq -c .sandbox.landlock.read <<< "$output")" = '["/usr/share/doc"]' ]
    run -0 "$FITRUN" detect --profile p.ini
    [[ "$output" == *"identity    unchanged (uid $(id -u)): user = root: jobs keep fitrun's identity"* ]]
    [[ "$output" == *"caps        kept: cap_net_raw"* ]]
}

@test "detect without Landlock says why, and a bad [sandbox] is 125" {
    run -0 "$HELPERS/no_landlock" --errno EOPNOTSUPP "$FITRUN" detect --json
    [ "$(jq -r .sandbox.landlock.abi <<< "$output")" = 0 ]
    [ "$(jq -r .sandbox.landlock.enforced <<< "$output")" = false ]
    [[ "$(jq -r .sandbox.landlock.why_not <<< "$output")" == "Landlock is built into the kernel but not enabled"* ]]
    [ "$(jq -r .sandbox.landlock.write_opens <<< "$output")" = denied ]
    run -0 "$HELPERS/no_landlock" "$FITRUN" detect
    [[ "$output" == *"landlock    not enforced: the kernel has no Landlock system calls"* ]]
    printf '[sandbox]\nread = /nonexistent-fitrun\n' > bad.ini
    run -125 "$FITRUN" detect --json --profile bad.ini
    [[ "$output" == *"read path '/nonexistent-fitrun': No such file or directory"* ]]
}

@test "detect --sysroot has no sandbox section (no kernel to ask)" {
    run -0 "$FITRUN" detect --json --sysroot "$FITRUN_SRC/tests/fixtures/v2-host"
    [ "$(jq -r .sandbox <<< "$output")" = null ]
}
