"""Runner keyword arguments -> `fitrun run` options.

Each keyword is the CLI option of the same name, so a Runner overrides the
profile exactly as the command line does (fitrun checks every value and
names a bad one; nothing is validated twice here):

    workers=2           --workers 2
    cpus=1.5            --cpus 1.5         (rounding, memory_per_worker alike)
    cpu_time="500ms"    --cpu-time 500ms   (wall_time, memory, output, preset alike)
    isolation="reuse"   --set runtime.isolation=reuse
    sandbox__allow="socket"   --set sandbox.allow=socket   (any SECTION__KEY)

Values: None leaves the option out (the profile decides); True/False become
true/false; a list or tuple becomes a comma-separated list (the profiles'
list syntax); anything else is str(value).
"""

# Keyword -> the option `fitrun run` has for it.
OPTIONS = {
    "workers": "--workers",
    "cpus": "--cpus",
    "rounding": "--rounding",
    "memory_per_worker": "--memory-per-worker",
    "cpu_time": "--cpu-time",
    "wall_time": "--wall-time",
    "memory": "--memory",
    "output": "--output",
    "preset": "--preset",
}

# Keyword -> the profile key it sets (no option of its own).
KEYS = {
    "isolation": "runtime.isolation",
}


def option_value(value):
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(option_value(v) for v in value)
    return str(value)


def run_arguments(overrides):
    """The argv tail for a dict of keyword arguments; TypeError for a
    keyword that is neither an option nor SECTION__KEY."""
    args = []
    for name, value in overrides.items():
        if value is None:
            continue
        if name in OPTIONS:
            args += [OPTIONS[name], option_value(value)]
            continue
        if name in KEYS:
            key = KEYS[name]
        else:
            section, sep, key = name.partition("__")
            if not sep or not section or not key:
                raise TypeError(f"Runner() got an unexpected keyword argument {name!r} "
                                f"(options: {', '.join(sorted(OPTIONS) + sorted(KEYS))}, "
                                f"or SECTION__KEY for any profile key)")
            key = f"{section}.{key}"
        args += ["--set", f"{key}={option_value(value)}"]
    return args
