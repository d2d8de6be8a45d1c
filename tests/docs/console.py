"""A `console` block: `$ command` lines, each followed by its expected output and, when not 0, `[exit N]`.

The output is compared line by line, trailing spaces ignored; a line `...` matches any number of lines and
`...` inside a line matches any text.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cache

from tests.docs.blocks import Block, PageError

EXIT = re.compile(r"^\[exit (\d+)\]$")
ELLIPSIS = "..."


@dataclass(frozen=True)
class Command:
    line: int  # the page's line of the `$ ` line
    command: str
    expected: tuple[str, ...]
    exit_code: int = 0


def commands(block: Block) -> list[Command]:
    """The block's commands; a line `$ cmd \\` continues on the next line, as in a shell."""
    lines = block.text.splitlines()
    found: list[Command] = []
    n = 0
    while n < len(lines):
        if not lines[n].startswith("$ "):
            raise PageError(f"{block.page}:{block.line + 1 + n}: a console block's output must follow a '$ ' line")
        start, command = n, lines[n][2:]
        while command.endswith("\\") and n + 1 < len(lines):
            n += 1
            command = command[:-1] + lines[n].removeprefix("> ")
        n += 1
        output = []
        while n < len(lines) and not lines[n].startswith("$ "):
            output.append(lines[n].rstrip())
            n += 1
        found.append(_command(block, block.line + 1 + start, command, output))
    return found


def _command(block: Block, line: int, command: str, output: list[str]) -> Command:
    while output and not output[-1]:
        output.pop()
    code = EXIT.match(output[-1]) if output else None
    if code:
        output.pop()
        if int(code[1]) == 0:
            raise PageError(f"{block.page}:{line}: '[exit 0]' says nothing: leave it out")
    return Command(line, command.strip(), tuple(output), int(code[1]) if code else 0)


def matches(expected: tuple[str, ...], actual: tuple[str, ...]) -> bool:
    """Line by line; `...` alone matches any lines (none too), `...` within a line any text."""
    reached = {0}  # how many actual lines the expected lines so far can stand for
    for pattern in expected:
        if pattern == ELLIPSIS:
            reached = set(range(min(reached), len(actual) + 1)) if reached else set()
        else:
            reached = {j + 1 for j in reached if j < len(actual) and _line(pattern).fullmatch(actual[j])}
    return len(actual) in reached


@cache
def _line(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.split(ELLIPSIS)), re.DOTALL)


def output_lines(output: str) -> tuple[str, ...]:
    lines = [line.rstrip() for line in output.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return tuple(lines)


def mismatch(command: Command, output: str, exit_code: int) -> str | None:
    """Why the command's run differs from what the page shows (None when it does not)."""
    actual = output_lines(output)
    same = matches(command.expected, actual)
    if same and exit_code == command.exit_code:
        return None
    lines = [f"exit {exit_code}, the page says {command.exit_code}"] if exit_code != command.exit_code else []
    if not same:
        lines += ["output differs (- the page, + the actual output):"]
        context = 3 if max(len(command.expected), len(actual)) > 40 else 40  # short: both in full
        lines += list(difflib.unified_diff(command.expected, actual, "page", "actual", lineterm="", n=context))[2:]
    else:
        lines += ["output (as the page shows it):", *actual]
    return "\n".join(lines)
