"""One progress display for a whole fit: its stages named, and the fits of each counted.

A default fit is several steps (the evidence step's MAP, then the kept ADVI fit and the
temperature's held-out fits, two at a time), so a bar per ADVI run restarted several
times, two at once, with no word of what it was for. :class:`FitProgress` instead
writes one line per stage to stderr: on a terminal the line is updated in place as the
stage's fits finish (``2 of 4 fits done``) and ends with the stage's time; elsewhere (a
log file, a pipe, CI) it writes the stage's start, each finished fit and its end as
separate lines, so that a 30-second fit is never silent.

Examples
--------
>>> import io
>>> out = io.StringIO()
>>> with FitProgress(enabled=True, stream=out, clock=iter(range(100)).__next__) as p:
...     with p.stage("prior scales from the evidence"):
...         pass
...     with p.stage("ADVI fits", fits=2):
...         p.fit_done()
...         p.fit_done()
>>> print(out.getvalue().strip())
fit: prior scales from the evidence ...
fit: prior scales from the evidence: done in 1 s
fit: ADVI fits ...
fit:   1 of 2 fits done (1 s)
fit:   2 of 2 fits done (2 s)
fit: ADVI fits: done in 3 s
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import time

__all__ = ["FitProgress", "chain_done"]

#: Progress displays whose current stage counts sampler chains (innermost last): a
#: sampler's chains run deep inside a fit, where no display is passed (chain_done).
_COUNTING_CHAINS: list[FitProgress] = []


def chain_done() -> None:
    """One sampler chain finished: counted by the innermost stage that counts chains
    (:meth:`FitProgress.stage` with ``unit="chains"``); else nothing."""
    if _COUNTING_CHAINS:
        _COUNTING_CHAINS[-1].fit_done()


class FitProgress:
    """Stages of one fit, written to ``stream`` (default ``sys.stderr``).

    Parameters
    ----------
    enabled : bool
        False: write nothing (every method is then a no-op).
    stream : file-like, optional
        Where to write; on a terminal (``stream.isatty()``) each stage is one line
        updated in place.
    prefix : str, default "fit"
        Starts every line.
    clock : callable, optional
        Seconds since some origin (default ``time.perf_counter``; for tests).
    """

    def __init__(self, *, enabled: bool, stream=None, prefix: str = "fit", clock=None):
        self.enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self.prefix = prefix
        self.clock = time.perf_counter if clock is None else clock
        self._lock = threading.Lock()
        self._stage = None

    def __enter__(self) -> FitProgress:
        return self

    def __exit__(self, *exc) -> bool:
        return False

    @property
    def live(self) -> bool:
        """Whether lines are updated in place (a terminal)."""
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def _write(self, text: str, *, end: str = "\n") -> None:
        self.stream.write(text + end)
        self.stream.flush()

    @contextlib.contextmanager
    def stage(self, name: str, *, fits: int = 0, unit: str = "fits"):
        """A named stage; ``fits``: how many fits it runs (counted by :meth:`fit_done`),
        or with ``unit="chains"`` how many sampler chains (counted by
        :func:`chain_done`)."""
        if not self.enabled:
            yield self
            return
        with self._lock:
            self._stage = {
                "name": name,
                "fits": fits,
                "done": 0,
                "start": self.clock(),
                "unit": unit,
            }
            self._write(f"{self.prefix}: {name} ...", end="" if self.live else "\n")
        if unit == "chains":
            _COUNTING_CHAINS.append(self)
        outcome = "done"
        try:
            yield self
        except BaseException as err:  # Ctrl-C or a failure: the stage did not finish
            outcome = "interrupted" if isinstance(err, KeyboardInterrupt) else "failed"
            raise
        finally:
            if unit == "chains":
                _COUNTING_CHAINS.remove(self)
            with self._lock:
                seconds = self.clock() - self._stage["start"]
                line = (
                    f"{self.prefix}: {name}: {outcome} after {_seconds(seconds)}"
                    if (outcome != "done")
                    else f"{self.prefix}: {name}: done in {_seconds(seconds)}"
                )
                self._write(f"\r\033[K{line}" if self.live else line)
                self._stage = None

    def fit_done(self) -> None:
        """One of the current stage's fits finished (thread-safe)."""
        if not self.enabled:
            return
        with self._lock:
            stage = self._stage
            if stage is None:
                return
            stage["done"] += 1
            seconds = _seconds(self.clock() - stage["start"])
            count = f"{stage['done']} of {stage['fits']} {stage['unit']} done"
            if self.live:
                self._write(
                    f"\r\033[K{self.prefix}: {stage['name']} ... {count}, {seconds}", end=""
                )
            else:
                self._write(f"{self.prefix}:   {count} ({seconds})")

    def counted(self, task):
        """``task`` (a callable) that reports :meth:`fit_done` when it returns."""
        if not self.enabled:
            return task

        @functools.wraps(task)
        def run(*args, **kwargs):
            result = task(*args, **kwargs)
            self.fit_done()
            return result

        return run


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 or value == int(value) else f"{value:.1f} s"
