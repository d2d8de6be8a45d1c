"""What a build asks the decision for (pure): the command line's flags, widened or narrowed by the CI
environment it runs in (a mapping the command passes in: $PIPEGEN_ONLY_STEP_KEYS, RUN_ALL=1, the pull
request's labels, the branch's lists, NIGHTLY, NOAUTO, DOCS_ONLY_DISABLE).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping

from pipegen.buildkite.branches import includes
from pipegen.errors import UsageError
from pipegen.model import LabelRule, Options, Settings


def requested(asked: Options, settings: Settings, environ: Mapping[str, str]) -> Options:
    """`asked` (the command line's --only, --all, --nightly, --unselected) with what the environment asks;
    the command line wins where both name the steps."""
    only = asked.only
    if only is None:
        for name in ("PIPEGEN_ONLY_STEP_KEYS", "VLLM_CI_ONLY_STEP_KEYS"):
            if name in environ:  # set but empty is refused below, as vLLM's generator refuses it
                only = _json_keys(name, environ[name])
                break
    run_all = asked.run_all
    for name in settings.run_all_env:
        if not run_all and environ.get(name) == "1":
            run_all = f"{name}=1"
    labels = pull_request_labels(environ)
    label_all, label_nightly, label_only = label_selection(settings.labels, labels)
    if label_only and only is None:
        only = label_only
    branch_all, branch_nightly = branch_policy(settings, environ)
    nightly = asked.nightly or environ.get("NIGHTLY") == "1" or label_nightly
    return Options(
        only=only,
        nightly=nightly or bool(branch_nightly),
        nightly_reason="" if nightly else branch_nightly,
        run_all=run_all or label_all or branch_all,
        noauto=environ.get("NOAUTO") == "1",
        # vLLM's generator skips a docs-only change only where DOCS_ONLY_DISABLE is unset or 0.
        docs_only_disable=environ.get("DOCS_ONLY_DISABLE", "0") != "0",
        added=label_additions(settings.labels, labels),
        unselected=asked.unselected,
    )


def build_branch(environ: Mapping[str, str]) -> str | None:
    """The branch of a Buildkite build that is not a pull request ($BUILDKITE_BRANCH); None elsewhere: a
    pull request, or a run outside Buildkite, is decided by its change."""
    branch = environ.get("BUILDKITE_BRANCH", "")
    if not branch or environ.get("BUILDKITE_PULL_REQUEST", "false") not in ("", "false"):
        return None
    return branch


def branch_policy(settings: Settings, environ: Mapping[str, str]) -> tuple[str, str]:
    """Why this build runs everything, and why it is a nightly build, by the config's branch lists ("" = not)."""
    branch = build_branch(environ)
    if branch is None or not (settings.run_all_branches or settings.nightly_branches):
        return "", ""

    def says(patterns: tuple[str, ...], name: str, what: str) -> str:
        if not patterns or not includes(patterns, branch):
            return ""
        return f"builds of branch {branch} {what} ({name}: {' '.join(patterns)})"

    return (says(settings.run_all_branches, "run_all_branches", "run everything"),
            says(settings.nightly_branches, "nightly_branches", "are nightly builds"))


# vLLM's generator refuses a key outside this pattern (ci-infra global_config.STEP_KEY_PATTERN).
VLLM_KEY = re.compile(r"[a-zA-Z0-9_-]+")


def pull_request_labels(environ: Mapping[str, str]) -> frozenset[str]:
    """The pull request's labels ($BUILDKITE_PULL_REQUEST_LABELS, comma-separated)."""
    return frozenset(label.strip() for label in environ.get("BUILDKITE_PULL_REQUEST_LABELS", "").split(","))


def label_selection(rules: tuple[LabelRule, ...],
                    labels: frozenset[str]) -> tuple[str, bool, tuple[str, ...] | None]:
    """What the pull request's labels ask for: run-all reason, nightly, keys (each once, in order)."""
    run_all, nightly, only = "", False, dict[str, None]()
    for rule in rules:
        if rule.label in labels:
            run_all = run_all or (f"pull-request label {rule.label}" if rule.run_all else "")
            nightly = nightly or rule.nightly
            only.update(dict.fromkeys(rule.only))
    return run_all, nightly, tuple(only) or None


def label_additions(rules: tuple[LabelRule, ...], labels: frozenset[str]) -> tuple[tuple[str, str], ...]:
    """The steps the pull request's labels add: (key, label), each key once (its first label)."""
    out: dict[str, str] = {}
    for rule in rules:
        if rule.label in labels:
            for key in rule.add:
                out.setdefault(key, rule.label)
    return tuple(out.items())


def _json_keys(name: str, text: str) -> tuple[str, ...]:
    """A non-empty JSON array of distinct keys, refused like vLLM's generator does: an empty list
    would otherwise skip every step without a word."""
    fix = f'write {name}=\'["key-1", "key-2"]\' (unset it to select by the change)'
    try:
        keys = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{name} is not valid JSON: {exc}", fix=fix) from None
    if not isinstance(keys, list) or not keys:
        raise UsageError(f"{name} must be a non-empty JSON array of step keys", fix=fix)
    pattern = VLLM_KEY if name.startswith("VLLM_") else None
    for key in keys:
        if not isinstance(key, str) or not key.strip() or (pattern and not pattern.fullmatch(key)):
            raise UsageError(f"{name} contains an invalid step key: {json.dumps(key)}", fix=fix)
    duplicates = sorted(k for k, n in Counter(keys).items() if n > 1)
    if duplicates:
        raise UsageError(f"{name} contains duplicate step keys: {', '.join(duplicates)}", fix="list each key once")
    return tuple(keys)


