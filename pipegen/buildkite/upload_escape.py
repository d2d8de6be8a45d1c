"""Declared text -> text that Buildkite's upload interpolation (interpolation.py) turns back into it.

In pipegen's own format a string is what the job gets: each `$` is written
`$$` (a `$$` always reads as one `$`, whatever follows it), except the
variables the config lists under `interpolate:`, which Buildkite fills at
upload. A backslash stays as it is (`\\\\` is text to Buildkite, and so is a
`\\` before anything but `$`), but an odd run of backslashes right before a
`$` cannot arrive: Buildkite reads `\\$` as an escaped `$` and drops the
backslash, and every way to write a `$` starts with `$` or `\\`. Such a string
is refused, as is one whose kept variables make the upload fail. vLLM's files
are written in Buildkite's syntax already (`$$VAR`), so the vLLM preset's
`interpolate: ["*"]` leaves every string as it is; it must still parse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from pipegen.buildkite.interpolation import Expansion, InterpolationError, TooDeep, name_at, parse, unescaped
from pipegen.errors import DeclarationError

if TYPE_CHECKING:
    from pipegen.model import Step

# Fields whose text the job's shell reads again (a `$VAR` there is the shell's).
SHELL_FIELDS = ("commands", "working_dir")


class Undeliverable(ValueError):
    """A string no escaping delivers to the agent as declared: why, and the fix."""

    def __init__(self, why: str, fix: str):
        super().__init__(why)
        self.why, self.fix = why, fix


BACKSLASH_FIX = ("copied from a pipeline.yml, where '\\$' is Buildkite's escape for '$'? write '$' alone (pipegen "
                 "escapes it); for the shell's own escape, put the '$' in single quotes ('$HOME') instead")


class Dollars:
    """Declared text -> uploaded text: `$` doubled except for the variables to keep ("*": all of them)."""

    def __init__(self, keep: Iterable[str] = ()):
        self.keep = frozenset(keep)
        self.all = "*" in self.keep

    def __call__(self, text: str) -> str:
        """The text to upload; Undeliverable when none arrives as `text`."""
        if "$" not in text:
            return text  # nothing to expand, and backslashes matter only before a `$`
        if self.all:
            out = text
        elif "\\" not in text and not self.keep:
            return text.replace("$", "$$")
        else:
            out = self._escape(text)
        try:
            parse(out)
        except TooDeep as exc:
            raise Undeliverable(str(exc), "write fewer nested defaults (${A:-${B:-...}})") from None
        except InterpolationError as exc:
            fix = ("write it in Buildkite's syntax: '$$' for a literal '$'" if self.all else
                   "correct the ${...} of the variable listed under 'interpolate:', or remove it from that list")
            raise Undeliverable(f"Buildkite's upload fails on it ({exc})", fix) from None
        return out

    def problem(self, text: str) -> Undeliverable | None:
        """Why `text` cannot be uploaded as declared; None when it can."""
        try:
            self(text)
        except Undeliverable as exc:
            return exc
        return None

    def _escape(self, text: str) -> str:
        out, i, n = [], 0, len(text)
        while i < n:
            char = text[i]
            if char == "\\":
                j = i
                while j < n and text[j] == "\\":
                    j += 1
                if j < n and text[j] == "$" and (j - i) % 2:
                    raise Undeliverable("a backslash right before '$' cannot reach the job: Buildkite reads '\\$' "
                                        "as an escaped '$' and drops the backslash", BACKSLASH_FIX)
                out.append(text[i:j])
                i = j
            elif char == "$":
                kept = self._kept(text, i)
                out.append(kept or "$$")
                i += len(kept) or 1
            else:
                j = i
                while j < n and text[j] not in "$\\":
                    j += 1
                out.append(text[i:j])
                i = j
        return "".join(out)

    def _kept(self, text: str, i: int) -> str:
        """`$NAME` or `${NAME` at `i` when NAME is a variable to keep (Buildkite's identifier rules)."""
        start = i + 1 + (text[i + 1:i + 2] == "{")
        name = name_at(text, start)
        return text[i:start + len(name)] if name and name in self.keep else ""


def uploaded(text: str) -> str:
    """Rendered text as the agent gets it after `pipeline upload`, its variables left to the shell
    (pipegen run: this machine's environment is not the agent's)."""
    return unescaped(text)


def strings(value: Any) -> Iterator[str]:
    """Every string in a field's value, mapping keys included (Buildkite interpolates both)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings(item)


def step_texts(step: Step) -> Iterator[tuple[str, str]]:
    """(field, text) for every string of a step that render uploads."""
    for name, value in (("label", step.label), ("group", step.group), ("block label", step.block_label),
                        ("working_dir", step.working_dir), ("concurrency_group", step.concurrency_group)):
        if value:
            yield name, value
    for command in step.commands:
        yield "commands", command
    for key, value in step.env:
        yield "env", key
        yield f"env {key}", value
    for name, value in step.buildkite:
        for text in strings(value):
            yield name, text


def step_problems(step: Step, dollars: Dollars) -> Iterator[tuple[str, str, Undeliverable]]:
    """(field, text, why) for each string of the step that cannot reach the agent as declared."""
    for field, text in step_texts(step):
        problem = dollars.problem(text) if "$" in text else None
        if problem:
            yield field, text, problem


def undeliverable_error(step: Step, field: str, text: str, problem: Undeliverable) -> str:
    """One line naming the step, the field and the text."""
    return f"step '{step.origin or step.key}', {field} {text!r}: {problem.why}"


def deliverable(step: Step, dollars: Dollars) -> None:
    """A DeclarationError naming the step and field of a string the agent would not get as declared."""
    for field, text, problem in step_problems(step, dollars):
        raise DeclarationError(undeliverable_error(step, field, text, problem), step.location, problem.fix)


# One upload-time variable as Buildkite's interpolation reads it: $NAME, ${NAME}, ${NAME:-default},
# ${NAME-default}, ${NAME?message}, ${NAME:offset[:length]} (`${NAME:?x}` is an offset Buildkite cannot read).
UPLOAD_VARIABLE = re.compile(r"\$(?:(?P<bare>[A-Za-z_][A-Za-z0-9_]*)|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                             r"(?:(?P<op>:-|-|\?|:)(?P<arg>[^}]*))?\})")


def upload_variable(text: str) -> re.Match[str] | None:
    """The match when `text` is exactly one upload-time variable (`${TIMEOUT?}`, `${TIMEOUT:-30}`) that
    Buildkite's parser reads (interpolation.parse: not `${T:?}`, `${T:x}` or `$_T`, on which the upload fails
    or which it leaves as text)."""
    match = UPLOAD_VARIABLE.fullmatch(text)
    try:
        items = parse(text) if match else ()
    except InterpolationError:
        return None
    return match if len(items) == 1 and isinstance(items[0], Expansion) else None


def upload_value(match: re.Match[str], environ: dict[str, str] | Any) -> str | None:
    """What Buildkite's upload makes of one variable in `environ` (None: unset, or `?` would fail the upload)."""
    name = match["bare"] or match["name"]
    value, op, arg = environ.get(name), match["op"] or "", match["arg"] or ""
    if op in (":-", "-"):
        return arg if value is None or (op == ":-" and value == "") else value
    if op == "?" and value is None:
        return None
    return value
