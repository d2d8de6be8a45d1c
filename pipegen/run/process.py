"""Run planned steps as processes: the I/O edge of `pipegen run`.

Each step is one `bash -e -c` script (Buildkite's shell semantics) in a
session of its own, so its process group holds everything it starts: a
timeout or Ctrl-C stops the group (SIGTERM, then SIGKILL after a grace
period), not just bash. Output goes straight to the step's log file; when the step
fails its tail is printed (a bounded read: a step may print gigabytes).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import BinaryIO, TextIO

from pipegen.run.artifacts import collect
from pipegen.run.local_plan import FAILED, Planned, Result, Status
from pipegen.run.output import duration
from pipegen.run.steps import blocked_by, soft_fails

TICK_S = 0.2  # how often the live display redraws and the timeout is checked
GRACE_S = 10.0  # SIGTERM -> SIGKILL
SHOWN_LINES = 500  # of a failed step's log, printed after it
TAIL_BYTES = 256 * 1024  # the most of a log that is read back: a step may print gigabytes


class Progress:
    """Plain lines, for logs and pipes: one when a step starts, one when it ends."""

    def __init__(self, out: TextIO, total: int):
        self.out, self.total = out, total

    @staticmethod
    def for_stream(out: TextIO, total: int, quiet: bool = False) -> Progress:
        if quiet:
            return Silent(out, total)
        return LiveProgress(out, total) if out.isatty() else Progress(out, total)

    def start(self, n: int, planned: Planned) -> None:
        self._line(f"{planned.heading(n, self.total)}: started")

    def tick(self, elapsed: float) -> None:
        """Called every TICK_S while the step runs."""

    def end(self, n: int, result: Result) -> None:
        if result.status in ("not run", "skipped"):
            self._line(f"[{n}/{self.total}] {result.planned.key}: {result.outcome}")
            return
        self._line(f"[{n}/{self.total}] {result.planned.key}: {result.outcome} in "
                   f"{duration(result.seconds)}; log: {result.planned.log}")

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()


class Silent(Progress):
    """-q: no line while the steps run (the summary says how each went; a failed step's log still shows)."""

    def _line(self, text: str) -> None:
        """Nothing."""


class LiveProgress(Progress):
    """On a terminal: the running step's line is redrawn with its elapsed time."""

    _current = ""

    def start(self, n: int, planned: Planned) -> None:
        self._current = planned.heading(n, self.total)
        self.tick(0.0)

    def tick(self, elapsed: float) -> None:
        self.out.write(f"\r\x1b[K{self._current}: running {duration(elapsed)}")
        self.out.flush()

    def end(self, n: int, result: Result) -> None:
        self.out.write("\r\x1b[K")
        super().end(n, result)


def run_all(runs: Sequence[Planned], progress: Progress, keep_going: bool, environ: Mapping[str, str]) -> list[Result]:
    """Run the jobs in (dependency) order. A job whose dependency failed is 'not run' unless it allows the
    failure; after a failure the rest are 'not run' unless keep_going."""
    results: list[Result] = []
    status: dict[str, str] = {}
    stop = ""
    with _sigterm_as_interrupt():
        for n, planned in enumerate(runs, 1):
            failed_dependency = blocked_by(planned, status)
            if planned.skip or stop or failed_dependency:
                result = Result(planned, "skipped" if planned.skip else "not run",
                                detail=planned.skip or stop or failed_dependency)
                progress.end(n, result)
            elif planned.plugins and not planned.step.commands:  # nothing here would do its work
                result = Result(planned, "incomplete", detail=f"not run: no commands; its plugins ({planned.plugins}) "
                                                              "run on Buildkite only")
                progress.end(n, result)
            else:
                progress.start(n, planned)
                result = without_plugins(run_step(planned, {**environ, **dict(planned.env)}, progress.tick))
                if planned.step.field("artifact_paths") is not None:
                    folder = os.path.splitext(planned.log)[0] + "-artifacts"
                    result = replace(result, artifacts=collect(planned.step.field("artifact_paths"), planned.root,
                                                               folder))
                progress.end(n, result)
            results.append(result)
            status[planned.key] = result.status
            if result.status == "interrupted":
                stop = "interrupted"
            elif result.status in FAILED and not stop:
                _show_log(progress.out, planned.log)
                if not keep_going:
                    stop = f"{planned.key} {result.status}; --keep-going runs the rest"
    return results


def without_plugins(result: Result) -> Result:
    """A step whose commands passed without its plugins is incomplete: the plugins' part was not done."""
    if result.status != "passed" or not result.planned.plugins:
        return result
    return replace(result, status="incomplete",
                   detail=f"commands passed; its plugins ({result.planned.plugins}) run on Buildkite only")


def run_step(planned: Planned, env: Mapping[str, str], tick: Callable[[float], None]) -> Result:
    try:
        _make_log_folder(os.path.dirname(os.path.abspath(planned.log)))
        log = _open_log(planned.log)
    except OSError as exc:  # checked before the run; a folder can still change under it
        return Result(planned, "failed", 0.0, f"cannot write its log {planned.log}: {exc.strerror}")
    start = time.monotonic()
    with log:
        try:
            with _interrupts_held() as held:
                proc = subprocess.Popen(["bash", "-e", "-c", planned.script], cwd=planned.cwd, env=dict(env),
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        except OSError as exc:
            log.write(f"pipegen: cannot start the step: {exc}\n".encode())
            return Result(planned, "failed", time.monotonic() - start, f"cannot start: {exc.strerror}")
        try:
            if held:
                raise KeyboardInterrupt
            status, detail = _wait(proc, planned.timeout_s, start, tick)
        except KeyboardInterrupt:
            stop_group(proc)
            status, detail = "interrupted", ""
    if status == "failed" and proc.returncode > 0 and soft_fails(planned.soft_fail, proc.returncode):
        status = "soft failed"
    return Result(planned, status, time.monotonic() - start, detail)


def _wait(proc: subprocess.Popen[bytes], timeout_s: float | None, start: float,
          tick: Callable[[float], None]) -> tuple[Status, str]:
    while True:
        try:
            code = proc.wait(TICK_S)
            break
        except subprocess.TimeoutExpired:
            elapsed = time.monotonic() - start
            tick(elapsed)
            if timeout_s is not None and elapsed > timeout_s:
                stop_group(proc)
                return "timed out", f"timed out after {duration(timeout_s)}"
    _signal_group(proc.pid, signal.SIGTERM)  # whatever the step left running in the background
    if code == 0:
        return "passed", ""
    return "failed", f"exit status {code}" if code > 0 else f"killed by {signal.Signals(-code).name}"


def stop_group(proc: subprocess.Popen[bytes], grace_s: float = GRACE_S) -> None:
    """SIGTERM the step's process group; SIGKILL what is left once bash exits or the grace period ends.

    Whether the rest of the group is gone cannot be told reliably (zombies
    still count where PID 1 does not reap), so it is not waited for.
    """
    _signal_group(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired, KeyboardInterrupt):  # a second Ctrl-C: no more waiting
        proc.wait(grace_s)
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@contextlib.contextmanager
def _interrupts_held() -> Iterator[list[int]]:
    """While a step starts, Ctrl-C and SIGTERM are only noted, in the list given.

    They raise KeyboardInterrupt; raised inside Popen after the fork (a loaded
    machine can keep pipegen there while the step is well under way), it
    would lose the started step, left running in a session of its own with
    nothing to stop it. The caller acts on them once it holds the process.
    """
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held  # Python runs signal handlers in the main thread only
        return
    raising = [sig for sig in (signal.SIGINT, signal.SIGTERM) if callable(signal.getsignal(sig))]
    previous = {sig: signal.signal(sig, lambda signum, frame: held.append(signum)) for sig in raising}
    try:
        yield held
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """pipegen's own SIGTERM (a cancelled CI job) stops the step's group like Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _open_log(path: str) -> BinaryIO:
    """The log, new and empty. A link planted at its name is refused, never followed; anything else there (an
    old log, a FIFO or hard link planted there) is removed first and the file created exclusively, so nothing is
    blocked on or written through."""
    if not os.path.islink(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.fdopen(os.open(path, flags, 0o644), "wb")


def _make_log_folder(folder: str) -> None:
    if os.path.isdir(folder):
        return
    os.makedirs(folder)
    # A folder we create holds only logs: git must ignore them, or the next
    # run would count them as uncommitted work that selects steps.
    with _open_log(os.path.join(folder, ".gitignore")) as f:
        f.write(b"# written by pipegen run\n*\n")


def read_log(path: str, lines: int | None = None) -> str:
    """A step's log, or its last `lines` lines; "" when it cannot be read. Only its last TAIL_BYTES are read
    (a step may print gigabytes): a longer log starts with a line that says how much is not shown."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - TAIL_BYTES))
            data = f.read(TAIL_BYTES)
    except OSError:
        return ""
    kept = data.splitlines(keepends=True)
    if size > TAIL_BYTES and len(kept) > 1:
        kept = kept[1:]  # the first is a partial line (unless it is all there is: one very long line)
    shown = b"".join(kept[-lines:] if lines else kept)
    hidden = size - len(shown)  # counted in the log's bytes, before decoding
    return ((f"[{hidden:,} earlier bytes not shown: the whole log is {path}]\n" if hidden > 0 else "")
            + shown.decode("utf-8", "replace"))


def _show_log(out: TextIO, path: str) -> None:
    text = read_log(path, SHOWN_LINES)
    if text and not text.endswith("\n"):
        text += "\n"
    out.write(f"----- {path} -----\n{text}----- end of {path} -----\n")
    out.flush()
