"""Build the man page fitrun(1) from the commands' own --help texts.

The option descriptions have one source, the help text of each command
(launcher/cli/cmd_*.c). This script runs the built fitrun for each help,
and fills docs/fitrun.1.in:

    @VERSION@              fitrun --version's number
    @SYNOPSIS@             every command's usage lines
    @COMMAND name@         one command's usage, description, options and
                           closing lines (name: detect, run, merge, submit,
                           wrapper)

    /usr/bin/python3 scripts/man.py --fitrun build/fitrun --template docs/fitrun.1.in --out build/fitrun.1
    /usr/bin/python3 scripts/man.py --fitrun build/fitrun --options run     # the options one help lists

A help text is: "usage:" lines (continuations indented), description lines,
option lines ("  -q, --quiet  text" or "  --jobs FILE|-  text": two spaces,
the option, two or more spaces, the description; continuation lines
indented further), then closing lines. Standard library only.
"""
import argparse
import re
import subprocess
import sys

COMMANDS = {
    "detect": ["detect", "--help"],
    "run": ["run", "--help"],
    "merge": ["merge", "--help"],
    "submit": ["submit", "--help"],
    "wrapper": ["--init", "--help"],
}
TITLES = {"wrapper": "fitrun [OPTIONS] [--] CMD [ARGS...]"}
OPTION = re.compile(r"^ {2,6}(-\S.*?)(?: {2,}(\S.*))?$")
CONTINUATION = re.compile(r"^ {8,}(\S.*)$")


def help_text(fitrun, name):
    p = subprocess.run([fitrun] + COMMANDS[name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if p.returncode != 0:
        sys.exit("man.py: %s %s exited %d: %s" % (fitrun, " ".join(COMMANDS[name]), p.returncode,
                                                    p.stderr.decode(errors="replace")))
    return p.stdout.decode()


def parse(text):
    """{usage: [lines], description: [lines], options: [(spec, text)], closing: [lines]}."""
    lines = text.rstrip("\n").split("\n")
    usage, i = [], 0
    while i < len(lines) and (i == 0 or lines[i].startswith(" ")) and not OPTION.match(lines[i]):
        # "usage: " goes; continuation lines keep their alignment under it
        usage.append(lines[i][len("usage: "):] if i == 0 else re.sub(r"^ {1,7}", "", lines[i]))
        i += 1
    description, options, closing = [], [], []
    for line in lines[i:]:
        m = OPTION.match(line)
        c = CONTINUATION.match(line)
        if m and not closing:
            options.append([m.group(1).strip(), m.group(2) or ""])
        elif c and options and not closing:
            options[-1][1] += " " + c.group(1)
        elif not options:
            if line.strip():
                description.append(line.strip())
        elif line.strip():
            closing.append(line.strip())
    return {"usage": usage, "description": description, "options": [tuple(o) for o in options], "closing": closing}


def long_names(spec):
    """The option names a spec line defines: "-q, --quiet" -> ["-q", "--quiet"]."""
    return [alt.split()[0] for alt in spec.split(", ")]


def esc(text):
    text = text.replace("\\", "\\e")
    return "\\&" + text if text[:1] in (".", "'") else text


def opt_roff(spec):
    parts = []
    for alt in spec.split(", "):
        words = alt.split(" ", 1)
        s = "\\fB" + esc(words[0]).replace("-", "\\-") + "\\fR"
        if len(words) > 1:
            s += " \\fI" + esc(words[1]).replace("-", "\\-") + "\\fR"
        parts.append(s)
    return ", ".join(parts)


def usage_roff(usage):
    out = [".nf"]
    for u in usage:
        out.append(esc(u).replace("-", "\\-"))
    out.append(".fi")
    return out


def command_roff(name, h):
    title = TITLES.get(name, "fitrun " + name)
    out = ['.SS "%s"' % esc(title)] + usage_roff(h["usage"])
    if h["description"]:
        out += [".PP", esc(" ".join(h["description"]))]
    for spec, text in h["options"]:
        out += [".TP", opt_roff(spec), esc(text)]
    if h["closing"]:
        out += [".PP", esc(" ".join(h["closing"]))]
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fitrun", required=True)
    ap.add_argument("--template")
    ap.add_argument("--out")
    ap.add_argument("--options", choices=sorted(COMMANDS), help="print the option names one help lists, and exit")
    a = ap.parse_args(argv)
    if a.options:
        for spec, _ in parse(help_text(a.fitrun, a.options))["options"]:
            print("\n".join(long_names(spec)))
        return 0
    if not a.template or not a.out:
        ap.error("--template and --out are required")
    helps = {n: parse(help_text(a.fitrun, n)) for n in COMMANDS}
    version = subprocess.run([a.fitrun, "--version"], stdout=subprocess.PIPE, check=True).stdout.decode().split()[-1]
    out = []
    with open(a.template, encoding="utf-8") as f:
        for line in f.read().rstrip("\n").split("\n"):
            m = re.match(r"^@COMMAND (\w+)@$", line)
            if m:
                out += command_roff(m.group(1), helps[m.group(1)])
            elif line == "@SYNOPSIS@":
                for n in COMMANDS:
                    out += usage_roff(helps[n]["usage"]) + [".br"]
            else:
                out.append(line.replace("@VERSION@", version))
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
