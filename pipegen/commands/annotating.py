"""`pipegen render --annotate`: post the annotation with `buildkite-agent annotate` (the I/O edge).

Annotating is a courtesy to the build page: it never fails the render. An agent that is missing, fails
or hangs past the timeout is one WARNING on stderr; the exit code and the pipeline printed stay as they
would be without --annotate.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from functools import partial

from pipegen.commands.options import RenderOptions, TerminalOptions
from pipegen.commands.terminal import warn
from pipegen.render.annotate import fit
from pipegen.shown import shown

AGENT = "buildkite-agent"


def style_of(failed: bool, warned: bool) -> str:
    """error when nothing was uploaded, warning when something was said on stderr (an untrusted diff
    selects everything), info otherwise."""
    return "error" if failed else "warning" if warned else "info"


def post(markdown: str, context: str, style: str, args: RenderOptions) -> bool:
    """`buildkite-agent annotate --context CONTEXT --style STYLE` with `markdown` (cut to 1 MiB) on its
    stdin, stopped after args.annotate_timeout; True when the agent took it. Never raises: a failure is
    said on stderr."""
    timeout, say = args.annotate_timeout, partial(_failed, args.terminal)
    argv = [AGENT, "annotate", "--context", context, "--style", style]
    body = fit(markdown).encode("utf-8")
    try:  # a session of its own: a timeout stops the agent and whatever it started
        agent = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 env=dict(args.environ), start_new_session=True)
    except OSError as exc:
        why = f"{AGENT} not found on PATH" if isinstance(exc, FileNotFoundError) else f"{AGENT}: {exc.strerror}"
        return say(why)
    try:
        said, _ = agent.communicate(body, timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(agent)
        return say(f"{AGENT} annotate did not finish within {timeout:g} s (stopped)")
    except BaseException:  # Ctrl-C: the agent's session is out of the terminal's reach, so stop it here
        _stop(agent)
        raise
    if agent.returncode != 0:
        lines = said.decode("utf-8", "replace").strip().splitlines()  # its last line says why, as it wrote it
        return say(f"{AGENT} annotate failed (exit {agent.returncode})" + (f": {shown(lines[-1])}" if lines else ""))
    return True


def _stop(agent: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):  # gone already
        os.killpg(agent.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):  # one that left the session keeps its pipe: not waited on
        agent.communicate(timeout=5)


def _failed(terminal: TerminalOptions, why: str) -> bool:
    warn(terminal, f"{why}; no annotation posted, the pipeline is unaffected")
    return False
