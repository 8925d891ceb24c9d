#!/usr/bin/python3
"""same_results.py — do two runs' result files agree on every job's
status, passed, outputs and error type (what a change to the launcher
must keep)? Prints one line; exits 1 when they differ.

    /usr/bin/python3 bench/same_results.py A.jsonl B.jsonl
"""
import json
import sys


def load(path):
    out = {}
    for line in open(path):
        j = json.loads(line)
        out[j["id"]] = (j["status"], j.get("passed"), j.get("outputs"), j.get("error_type"))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    ra, rb = load(sys.argv[1]), load(sys.argv[2])
    diff = [k for k in ra if ra[k] != rb.get(k)] + [k for k in rb if k not in ra]
    print(f"results: {len(ra)} and {len(rb)}, {len(diff)} differ (id, status, passed, outputs, error_type)"
          + (f": {', '.join(diff[:5])}" if diff else ""))
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
