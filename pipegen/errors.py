"""Errors a user can cause. The CLI prints them as one line and exits non-zero."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # model.py is costly to import, and `pipegen --version` needs errors.py
    from pipegen.model import Location

# Every exit code pipegen has, in one place (docs/reference/exit-codes.md is generated from EXIT_CODES).
EXIT_OK = 0
EXIT_FINDINGS = 1  # findings, a failed test, an invalid pipeline
EXIT_USAGE = 2  # usage error, unreadable or invalid declarations
EXIT_OUTPUT = 3  # the output could not be written (a closed stdout, a full disk): no result was delivered
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT), as a shell reports it: 128 + 2
EXIT_CODES = {
    EXIT_OK: "done: the command did what was asked (check: no errors, warnings allowed)",
    EXIT_FINDINGS: "the command ran and says no: check found errors; render's pipeline would be refused (schema, "
    "limits); a step failed or timed out, or a --step cannot run here (run); --fail-on-loss found a loss (audit); "
    "import could not carry everything over (its files are still written); --strict-diff or 'uncovered: fail' "
    "refused the change",
    EXIT_USAGE: "usage error or unreadable input: an unknown option, a --base that does not resolve, declarations "
    "that cannot be loaded (check reports them as declaration-error findings)",
    EXIT_OUTPUT: "the output could not be written (a closed or broken stdout, a full disk): no result was delivered",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C): every write in flight was undone; run stops its steps' process groups",
}


class PipegenError(Exception):
    """A problem with the user's input: printed without a traceback."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, location: Location | None = None, fix: str = ""):
        super().__init__(message)
        self.message = message
        self.location = location
        self.fix = fix

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        return f"{text}\n  fix: {self.fix}" if self.fix else text


class DeclarationError(PipegenError):
    """Invalid CI declarations (YAML syntax, schema, graph)."""


class DeclarationErrors(DeclarationError):
    """Several invalid declarations found in one pass (one per file), so a user fixes them all at once."""

    def __init__(self, errors: list[DeclarationError]):
        super().__init__(f"{len(errors)} declaration errors", errors[0].location, errors[0].fix)
        self.errors = tuple(errors)

    def __str__(self) -> str:
        return "\n".join([f"{self.message}:", *(str(e) for e in self.errors)])


def raise_all(errors: list[DeclarationError]) -> None:
    """Raise the one error, or all of them together; nothing when there are none."""
    flat = [e for error in errors for e in getattr(error, "errors", (error,))]
    if len(flat) == 1:
        raise flat[0]
    if flat:
        raise DeclarationErrors(flat)


class UsageError(PipegenError):
    """Bad command-line usage or environment (not a repository, unknown key)."""


class OutputError(PipegenError):
    """The rendered pipeline would not be accepted (schema, limits)."""

    exit_code = EXIT_FINDINGS
    step_key: str | None = None  # the rendered step at fault, when one is
    line: int = 0  # the line of the rendered text at fault, when one is


def suggest(name: str, known: Any, noun: str = "fields") -> str:
    """The fix for an unknown name: the closest known one, or the list of known ones."""
    import difflib

    close = difflib.get_close_matches(str(name), list(known), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else f"known {noun}: {', '.join(sorted(known))}"
