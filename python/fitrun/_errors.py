"""The one exception of the client."""
import signal


class RunnerError(RuntimeError):
    """The Runner cannot give results: fitrun could not start, died (killed,
    crashed, bad profile: it exits 125 with the file:line on stderr), was
    stopped, or the Runner was closed.

    ``returncode`` is fitrun's exit status as ``subprocess`` reports it
    (negative: killed by that signal; ``None``: it had not exited) and
    ``stderr`` the end of what fitrun wrote on stderr.
    """

    def __init__(self, message, returncode=None, stderr=""):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


def describe_exit(pid, returncode):
    """'fitrun (pid 42) exited with status 125' / '... was killed by SIGKILL'."""
    if returncode is None:
        return f"fitrun (pid {pid}) is gone"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"fitrun (pid {pid}) was killed by {name}"
    return f"fitrun (pid {pid}) exited with status {returncode}"
