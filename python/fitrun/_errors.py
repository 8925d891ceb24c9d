"""The one exception of the client."""
import signal


class RunnerError(RuntimeError):
    """The Runner cannot give results: fitrun could not start, died (killed,
    crashed, bad profile: it exits 125 with the file:line on stderr), was
    stopped, or the Runner was closed.

    ``returncode`` is fitrun's exit status as ``subprocess`` reports it
    (negative: killed by that signal; ``None``: it had not exited) and
    ``stderr`` the end of what fitrun wrote on stderr. From ``map``,
    ``results`` is the call's results in input order, None for each job
    that got none (else ``results`` is None).
    """

    def __init__(self, message, returncode=None, stderr="", results=None):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.results = results


# fitrun's exit statuses 128 + N: stopped by signal N, cleanly (docs/run.md).
INTERRUPTS = {128 + s: s.name for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)}


def describe_exit(pid, returncode):
    """'fitrun (pid 42) exited with status 125' / '... was killed by SIGKILL' /
    '... was interrupted by SIGTERM (exit status 143)'."""
    if returncode is None:
        return f"fitrun (pid {pid}) is gone"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"fitrun (pid {pid}) was killed by {name}"
    if returncode in INTERRUPTS:
        return f"fitrun (pid {pid}) was interrupted by {INTERRUPTS[returncode]} (exit status {returncode})"
    return f"fitrun (pid {pid}) exited with status {returncode}"
