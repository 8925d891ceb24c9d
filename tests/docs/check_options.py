"""One source for option descriptions: check the man page and the docs
against the commands' --help.

For each command (detect, run, merge, submit, the wrapper), with the help
text parsed as scripts/man.py parses it:
  - every option in the usage synopsis is described in the option table,
    and every described long option appears in the synopsis (the wrapper's
    synopsis says [OPTIONS]: skipped);
  - the man page's section for the command describes exactly the options
    of the help (.TP entries), and every --option the man page names
    anywhere is an option of some command;
  - the command's document names every option of the help (`--opt`), and
    every option in its option table rows (`| `--opt`...`) is in the help.

    /usr/bin/python3 tests/docs/check_options.py --src . --fitrun build/fitrun --man build/fitrun.1

Prints each mismatch; exits 1 if there is one. Standard library only.
"""
import argparse
import os
import re
import sys

DOCS = {"detect": "docs/detect.md", "run": "docs/run.md", "merge": "docs/scale-out.md",
        "submit": "docs/scale-out.md", "wrapper": "docs/entrypoint.md"}
SECTIONS = {"detect": "fitrun detect", "run": "fitrun run", "merge": "fitrun merge", "submit": "fitrun submit",
            "wrapper": "fitrun [OPTIONS] [--] CMD [ARGS...]"}
LONG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def load_man_module(src):
    sys.path.insert(0, os.path.join(src, "scripts"))
    import man  # noqa: E402  (scripts/man.py, found through the path above)
    return man


def names(spec_list, man):
    out = set()
    for spec, _ in spec_list:
        out.update(man.long_names(spec))
    return out


def man_sections(text):
    """{section title: roff text} of the .SS subsections."""
    out, cur = {}, None
    for line in text.split("\n"):
        m = re.match(r'^\.SS "(.*)"$', line)
        if m:
            cur = m.group(1).replace("\\-", "-")
            out[cur] = []
        elif line.startswith(".SH"):
            cur = None
        elif cur:
            out[cur].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def tp_options(roff):
    """The option names of the .TP entries of one section."""
    lines, out = roff.split("\n"), set()
    for i, line in enumerate(lines):
        if line == ".TP" and i + 1 < len(lines):
            tag = lines[i + 1].replace("\\-", "-")
            out.update(re.findall(r"\\fB(-[^\\]+)\\fR", tag))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--fitrun", required=True)
    ap.add_argument("--man", required=True)
    a = ap.parse_args(argv)
    man = load_man_module(a.src)
    problems = []
    helps = {n: man.parse(man.help_text(a.fitrun, n)) for n in man.COMMANDS}
    with open(a.man, encoding="utf-8") as f:
        page = f.read()
    sections = man_sections(page)
    every = set()
    for n, h in helps.items():
        opts = names(h["options"], man)
        every |= opts
        longs = {o for o in opts if o.startswith("--")}
        if n != "wrapper":
            synopsis = set(LONG.findall(" ".join(h["usage"])))
            for o in sorted(synopsis - longs):
                problems.append("%s --help: %s is in the synopsis but not described" % (n, o))
            for o in sorted(longs - synopsis - {"--help"}):
                problems.append("%s --help: %s is described but not in the synopsis" % (n, o))
        sec = sections.get(SECTIONS[n])
        if sec is None:
            problems.append("man page: no section for %s" % SECTIONS[n])
        else:
            in_man = tp_options(sec)
            for o in sorted(opts - in_man):
                problems.append("man page, %s: %s is in --help but not in the man page" % (SECTIONS[n], o))
            for o in sorted(in_man - opts):
                problems.append("man page, %s: %s is in the man page but not in --help" % (SECTIONS[n], o))
        with open(os.path.join(a.src, DOCS[n]), encoding="utf-8") as f:
            doc = f.read()
        for o in sorted(longs):
            if "`" + o not in doc and o != "--help":
                problems.append("%s: does not name %s (an option of %s --help)" % (DOCS[n], o, n))
    for n, doc_path in DOCS.items():
        if n == "merge":
            continue  # scale-out.md's table is submit's; merge is checked above
        allowed = names(helps[n]["options"], man) | (names(helps["merge"]["options"], man) if n == "submit" else set())
        with open(os.path.join(a.src, doc_path), encoding="utf-8") as f:
            for k, line in enumerate(f, 1):
                if not line.startswith("| `-"):
                    continue
                first_cell = line.split("|")[1]
                for o in LONG.findall(first_cell):
                    if o not in allowed:
                        problems.append("%s:%d: option table names %s, which %s --help does not have" %
                                        (doc_path, k, o, n))
    for o in sorted(set(LONG.findall(page.replace("\\-", "-"))) - every - {"--version"}):
        problems.append("man page: names %s, which no command's --help has" % o)
    for p in problems:
        print(p)
    print("%d problem%s" % (len(problems), "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
