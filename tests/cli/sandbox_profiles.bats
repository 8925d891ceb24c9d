#!/usr/bin/env bats
# The example profiles for ordinary programs (profiles/shell.ini,
# pyenv.ini, network-client.ini): each runs what it is for, and the default
# profile refuses the same job (so the profile is what makes it work).

load run_common

setup() {
    run_setup
    LL=$("$FITRUN" detect --json | jq .sandbox.landlock.abi)
    PROFILES=$FITRUN_SRC/profiles
}
teardown() {
    [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
    run_teardown
}

sh_job() { jq -cn --arg id "$1" --arg s "$2" '{id: $id, argv: ["sh", "-c", $s]}'; }

@test "shell.ini: pipelines, substitutions, bash scripts" {
    {
        sh_job pipe 'echo hi | tr a-z A-Z'
        sh_job subst 'n=$(printf "a\nb\n" | wc -l); echo "lines=$n"'
        sh_job bg 'sleep 0.1 & wait; echo waited'
        jq -cn '{id: "bash", argv: ["bash", "-c", "set -e; f() { echo \"$1\" | rev; }; f abc; ls /usr/bin | head -1 >/dev/null; echo done"]}'
    } > jobs.jsonl
    run -0 "$FITRUN" run --profile "$PROFILES/shell.ini" --jobs jobs.jsonl --out out.jsonl --quiet
    [ "$(field out.jsonl pipe stdout)" = HI ]
    [ "$(field out.jsonl subst stdout)" = lines=2 ]
    [ "$(field out.jsonl bg stdout)" = waited ]
    if [ "$LL" -ge 3 ]; then # `>/dev/null` is an O_TRUNC open: Landlock ABI 3 rules truncation
        [ "$(field out.jsonl bash stdout)" = "$(printf 'cba\ndone')" ]
    fi
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet
    [ "$(field out.jsonl pipe status)" = violation ]
    [ "$(field out.jsonl pipe syscall)" = pipe2 ]
}

@test "pyenv.ini: python3 through pyenv's PATH shim" {
    local shim
    shim=$(command -v python3)
    [[ "$shim" == */shims/python3 ]] || skip "python3 on PATH is not a shim ($shim)"
    [ -d /root/.pyenv ] || skip "pyenv is not in /root/.pyenv (the profile's path)"
    [ "$LL" -ge 3 ] || skip "the shim's bash redirects to /dev/null: needs Landlock ABI >= 3"
    job py python3 -c 'import sys; print(sys.executable)' > jobs.jsonl
    run -0 "$FITRUN" run --profile "$PROFILES/pyenv.ini" --jobs jobs.jsonl --out out.jsonl --quiet
    [ "$(field out.jsonl py status)" = ok ]
    [[ "$(field out.jsonl py stdout)" == /root/.pyenv/versions/*/bin/python3* ]]
    # The default profile cannot even read the shim: PATH search goes on to
    # /usr/bin/python3 (execvp skips what it may not execute).
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet
    [ "$(field out.jsonl py status)" = ok ]
    [ "$(field out.jsonl py stdout)" = /usr/bin/python3 ]
}

@test "network-client.ini: curl and Python's urllib against a loopback server" {
    mkdir www
    echo hello-net > www/index.html
    local port
    port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    /usr/bin/python3 -m http.server "$port" --bind 127.0.0.1 --directory www >/dev/null 2>&1 &
    SERVER=$!
    wait_for curl -sf "http://127.0.0.1:$port/" -o /dev/null
    {
        job curl curl -sS "http://localhost:$port/"
        job py /usr/bin/python3 -c "import urllib.request; print(urllib.request.urlopen('http://localhost:$port/').read().decode().strip())"
    } > jobs.jsonl
    run -0 "$FITRUN" run --profile "$PROFILES/network-client.ini" --jobs jobs.jsonl --out out.jsonl --quiet
    [ "$(field out.jsonl curl stdout)" = hello-net ]
    [ "$(field out.jsonl py stdout)" = hello-net ]
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet
    [ "$(field out.jsonl curl status)" = violation ]
    [ "$(field out.jsonl curl syscall)" = socketpair ] # curl's wake-up pair comes first
    [ "$(field out.jsonl py status)" = violation ]
    [ "$(field out.jsonl py syscall)" = socket ]
    # A client, not a server: listening is still a violation.
    job srv /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))' > jobs.jsonl
    run -0 "$FITRUN" run --profile "$PROFILES/network-client.ini" --jobs jobs.jsonl --out out.jsonl --quiet
    [ "$(field out.jsonl srv status)" = violation ]
    [ "$(field out.jsonl srv syscall)" = bind ]
}
