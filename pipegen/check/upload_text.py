"""Text that does not reach the agent as declared, after Buildkite's upload interpolation. Pure.

- escaped-dollar: a `$$` copied from a hand-written pipeline.yml, where it is
  Buildkite's escape for `$`. pipegen escapes every `$` itself (but
  `interpolate:`'s), so the job would get `$$`: the shell's process id, or a
  regex's `$` twice.
- undeliverable-text: a string no escaping delivers (a backslash right before
  a `$`), or one on which the upload fails (a kept variable's `${...}`
  Buildkite cannot parse; in vLLM's files, any). render refuses it too.
- variable-not-expanded: a `$VAR` outside the commands: pipegen escapes it, and
  nothing after the upload expands artifact_paths, plugin options, env, labels.
"""

from __future__ import annotations

from pipegen.buildkite.interpolation import variables
from pipegen.buildkite.upload_escape import SHELL_FIELDS, Dollars, step_problems, step_texts, undeliverable_error
from pipegen.check.findings import Finding
from pipegen.model import Declarations, Step


def upload_text_findings(decl: Declarations) -> list[Finding]:
    dollars = Dollars(decl.settings.interpolate)
    out: list[Finding] = []
    for step in decl.steps:
        out += [Finding("undeliverable-text", "error", step.location, undeliverable_error(step, field, text, problem),
                        problem.fix, _declared(step)) for field, text, problem in step_problems(step, dollars)]
    if dollars.all:  # vLLM's files are Buildkite syntax: `$$` and `$VAR` mean what Buildkite makes of them
        return out
    for step in decl.steps:
        out += _escaped_dollar(step) + _not_expanded(step, dollars)
    return out


def _declared(step: Step) -> str:
    return step.origin or step.key  # a fan-out's targets share the declaration: one finding


def _escaped_dollar(step: Step) -> list[Finding]:
    if not any("$$" in text for _, text in step_texts(step)):
        return []
    key = _declared(step)
    return [Finding("escaped-dollar", "warning", step.location,
                    f"step '{key}' has '$$', which pipegen renders as '$$$$': the job gets '$$'",
                    "write '$' once: pipegen escapes it for Buildkite (a pipeline.yml's '$$' means '$')", key)]


def _not_expanded(step: Step, dollars: Dollars) -> list[Finding]:
    for field, text in step_texts(step):
        if field in SHELL_FIELDS or "$" not in text:
            continue
        names = [name for name in variables(text) if name not in dollars.keep]
        if names:
            key = _declared(step)
            return [Finding("variable-not-expanded", "warning", step.location,
                            f"step '{key}', {field} {text!r}: '${names[0]}' reaches the agent as that literal text "
                            f"(pipegen escapes '$', and nothing expands {field} after the upload)",
                            f"list {names[0]} under the config's 'interpolate:' so that Buildkite fills it in at "
                            "upload, or compute the value in a command", key)]
    return []
