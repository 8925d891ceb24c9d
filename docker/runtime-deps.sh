#!/bin/sh
# runtime-deps.sh — used by docker/Dockerfile, in two places:
#
#   runtime-deps.sh list ROOT   (build stage) print the Debian packages that
#                               the ELF files under ROOT link against, one a
#                               line, from ldd + dpkg -S
#   runtime-deps.sh install FILE  (runtime stages) install the packages of
#                               FILE that are not installed yet, then check
#                               that fitrun's libraries all resolve
#
# Why: which libraries fitrun links depends on the build (a dynamic one,
# -DFITRUN_STATIC=OFF, links inih, jansson and libcgroup too). The runtime stages
# pre-install the usual set in a cached layer; this catches the rest, so the
# image never ships a binary with a "not found" library.
set -eu

list() {
    root=$1
    find "$root" -type f \( -perm -u+x -o -name '*.so*' \) | while read -r f; do
        [ "$(head -c4 "$f" | tail -c3)" = ELF ] && ldd "$f"
    done | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
        # merged /usr: dpkg may know the file under /lib or /usr/lib
        dpkg -S "$lib" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null ||
            dpkg -S "${lib#/usr}" 2>/dev/null || echo "unknown-package-for=$lib"
    done | sed 's/:[^:]*$//; s/:.*//' | sort -u
}

install() {
    missing=
    for p in $(cat "$1"); do
        case $p in unknown-package-for=*) echo "runtime-deps: no Debian package owns ${p#*=}" >&2; exit 1 ;; esac
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing="$missing $p"
    done
    if [ -n "$missing" ]; then
        echo "runtime-deps: installing packages not in the cached layer:$missing" >&2
        apt-get update -qq
        # shellcheck disable=SC2086  # $missing is a list of package names
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
        apt-get clean; rm -rf /var/lib/apt/lists/*
    fi
    if ldd /usr/local/bin/fitrun | grep 'not found'; then
        echo "runtime-deps: /usr/local/bin/fitrun has unresolved libraries" >&2
        exit 1
    fi
}

case ${1:-} in
list) list "$2" ;;
install) install "$2" ;;
*) echo "usage: runtime-deps.sh list ROOT | install FILE" >&2; exit 2 ;;
esac
