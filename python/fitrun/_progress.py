"""The progress bar of a Runner (progress=True): tqdm when it can be
imported, else a plain one in the style of fitrun's own `--progress bar`.

Both count over the Runner's whole life: the total is the number of jobs
submitted so far, so it grows batch after batch."""
import sys
import time

REFRESH_S = 0.1  # at most 10 redraws a second, like tqdm and fitrun


def make_bar(file=None):
    try:
        import tqdm
    except ImportError:
        return PlainBar(file)
    return TqdmBar(tqdm, file)


class PlainBar:
    """`37% [#######.............] 370/1000 [00:10<00:17, 37.0 jobs/s] ok 350  error 15`,
    redrawn in place on stderr."""

    WIDTH = 20

    def __init__(self, file=None):
        self.file = file or sys.stderr
        self.total = self.done = 0
        self.counts = {}
        self.start = time.monotonic()
        self.drawn = 0.0
        self.width = 0

    def add(self, n):
        self.total += n
        self._maybe_draw()

    def finished(self, status):
        self.done += 1
        self.counts[status] = self.counts.get(status, 0) + 1
        self._maybe_draw()

    def close(self):
        self.draw()
        self.file.write("\n")
        self.file.flush()

    def _maybe_draw(self):
        now = time.monotonic()
        if now - self.drawn >= REFRESH_S or self.done == self.total:
            self.draw(now)

    def line(self, now=None):
        now = now or time.monotonic()
        elapsed = now - self.start
        frac = self.done / self.total if self.total else 0.0
        fill = int(frac * self.WIDTH)
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else None
        counts = "  ".join(f"{s} {n}" for s, n in sorted(self.counts.items(), key=lambda x: -x[1]))
        return (f"{frac * 100:3.0f}% [{'#' * fill}{'.' * (self.WIDTH - fill)}] {self.done}/{self.total} "
                f"[{_clock(elapsed)}<{_clock(eta)}, {rate:.1f} jobs/s] {counts}").rstrip()

    def draw(self, now=None):
        self.drawn = now or time.monotonic()
        text = self.line(self.drawn)
        self.file.write("\r" + text + " " * max(0, self.width - len(text)))
        self.file.flush()
        self.width = len(text)


class TqdmBar:
    def __init__(self, tqdm, file=None):
        self.bar = tqdm.tqdm(total=0, unit="job", file=file or sys.stderr, dynamic_ncols=True)
        self.counts = {}
        self.posted = 0.0

    def add(self, n):
        self.bar.total += n
        self.bar.refresh()

    def finished(self, status):
        self.counts[status] = self.counts.get(status, 0) + 1
        now = time.monotonic()
        if now - self.posted >= REFRESH_S:
            self.posted = now
            self.bar.set_postfix(self.counts, refresh=False)
        self.bar.update(1)

    def close(self):
        self.bar.set_postfix(self.counts, refresh=False)
        self.bar.close()


def _clock(seconds):
    if seconds is None:
        return "?"
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60:02d}:{rest % 60:02d}"
