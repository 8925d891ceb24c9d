"""Helpers of the ARC converter and scorer: reading JSON and JSON Lines with
file:line errors, the code block of an LLM answer, what an ARC grid is."""
import json
import re


class InputError(Exception):
    """Bad input: the message names the file (and line when known)."""


def load_json(path):
    """Parse a whole JSON file; errors name file:line:column."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None


def read_jsonl(path, problems):
    """Yield (line_number, object) for each non-empty line; a bad line is
    recorded in `problems` as "path:line: why" and skipped."""
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}") from None
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                problems.append(f"{path}:{n}: invalid JSON: {e.msg} (column {e.colno})")
                continue
            if not isinstance(obj, dict):
                problems.append(f"{path}:{n}: not a JSON object")
                continue
            yield n, obj


# The first fenced block tagged python (or py), as LLMs write them.
_CODE_BLOCK = re.compile(r"```[ \t]*(?:python|py)[ \t]*\r?\n(.*?)```", re.DOTALL | re.IGNORECASE)


def extract_code(text):
    """The code of the first ```python block of an LLM answer, or None."""
    m = _CODE_BLOCK.search(text)
    return m.group(1) if m else None


def is_grid(x):
    """An ARC grid: 1..30 rows of 1..30 integers 0..9, all rows equally long."""
    if not isinstance(x, list) or not 1 <= len(x) <= 30:
        return False
    width = None
    for row in x:
        if not isinstance(row, list) or not 1 <= len(row) <= 30:
            return False
        if width is None:
            width = len(row)
        elif len(row) != width:
            return False
        for v in row:
            if type(v) is not int or not 0 <= v <= 9:
                return False
    return True
