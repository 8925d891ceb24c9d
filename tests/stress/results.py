"""results.py — what the stress tests share about a results file: the
failure they raise, and its lines as fitrun wrote them."""


class Broken(Exception):
    """A promise of fitrun did not hold (the message says which, where)."""


def result_lines(path):
    """(line number from 1, the line's bytes) for each complete line of
    path; Broken if the file ends inside a line."""
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        raise Broken(f"{path}: ends inside a line")
    return enumerate(data.split(b"\n")[:-1], 1)
