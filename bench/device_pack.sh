#!/usr/bin/env bash
# device_pack.sh — one directory that holds everything bench/scale.sh needs
# on a machine that receives only this checkout (a lent benchmark VM: no
# ../shared, no libseccomp or libcap packages, no network), to be carried
# there as an ignored path:
#
#   bench/device_pack.sh --corpus DIR [--build build] [--out build/device] [--jobs N]
#
#   DIR     a self-contained corpus: jobs.jsonl, profile.ini, prelude.py and the
#           modules it imports (bench/arc_dsl_corpus.py --copy-dsl makes one)
#   --jobs  keep only its first N predictions (default: all)
#
# It copies the static fitrun, the runtime script, libfitrun_sandbox.so and
# the two shared libraries that one loads (found with ldd here), and the
# corpus, whose profile gets `pass_env = LD_LIBRARY_PATH`: fitrun scrubs the
# environment of its Python interpreter, which must still find them. Then,
# from the checkout's root on that machine:
#
#   build/device/scale.sh [bench/scale.sh options: --workers 1,2,4,8,16 --rounds 2]
#
# which runs bench/scale.sh over the pack with the machine's own python3,
# writing into $OUT/scale (or build/device/scale).
set -euo pipefail

die() { echo "device_pack: $*" >&2; exit 2; }

build=build out=build/device corpus="" jobs=""
while [ $# -gt 0 ]; do
    case $1 in
    --corpus) corpus=${2:?}; shift 2 ;;
    --build) build=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    *) die "unknown argument '$1' (see the head of $0)" ;;
    esac
done
[ -n "$corpus" ] || die "--corpus DIR is required"
for f in jobs.jsonl profile.ini prelude.py; do
    [ -f "$corpus/$f" ] || die "$corpus/$f: not found"
done
[ -x "$build/fitrun" ] || die "$build/fitrun: not built"
lib=$build/lib/libfitrun_sandbox.so
[ -f "$lib" ] || die "$lib: not built"
[ -f "$build/share/fitrun/python/fitrun_runtime.py" ] || die "$build/share/fitrun/python: not built"
if [ -n "$jobs" ] && ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
    die "--jobs $jobs: not a positive number"
fi

rm -rf "$out"
mkdir -p "$out/lib" "$out/share/fitrun" "$out/corpus"
cp "$build/fitrun" "$out/fitrun"
cp -r "$build/share/fitrun/python" "$out/share/fitrun/python"
cp "$lib" "$out/lib/"
# The libraries the sandbox library loads, from wherever this machine has
# them (the target may have none).
for name in libseccomp.so.2 libcap.so.2; do
    path=$(ldd "$lib" | awk -v n="$name" '$1 == n {print $3}')
    [ -n "$path" ] && [ -f "$path" ] || die "$lib: ldd does not resolve $name"
    cp -L "$path" "$out/lib/$name"
done
cp "$corpus"/*.py "$corpus/profile.ini" "$out/corpus/"
[ -f "$corpus/corpus.json" ] && cp "$corpus/corpus.json" "$out/corpus/"
if [ -n "$jobs" ]; then
    head -n "$jobs" "$corpus/jobs.jsonl" > "$out/corpus/jobs.jsonl"
else
    cp "$corpus/jobs.jsonl" "$out/corpus/jobs.jsonl"
fi
grep -q '^\[sandbox\]' "$out/corpus/profile.ini" || die "$corpus/profile.ini: no [sandbox] section"
sed -i 's/^\[sandbox\]$/[sandbox]\npass_env = LD_LIBRARY_PATH/' "$out/corpus/profile.ini"

cat > "$out/scale.sh" <<'EOF'
#!/usr/bin/env bash
# Made by bench/device_pack.sh: bench/scale.sh over this pack, with this
# machine's python3. Run from the checkout's root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec bench/scale.sh --corpus "$here/corpus" --fitrun "$here/fitrun" --python "$(command -v python3)" \
    --out "${OUT:-$here}/scale" "$@"
EOF
chmod +x "$out/scale.sh"
echo "device_pack: $out: $(du -sh "$out" | cut -f1), $(wc -l < "$out/corpus/jobs.jsonl") predictions;" \
    "carry it, then run $out/scale.sh from the checkout's root"
