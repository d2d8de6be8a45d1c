"""Two builds (build.py) compared: the original uploads' and the rendered pipeline's. Equal or what differs.

Jobs are matched by key; a job the original gave no key is matched, kind by kind and in order, with a
rendered job whose key no original job has (a key Buildkite shows nowhere). A label the original left
out is not compared (the job shows its command). Everything else is: kind, group, fields, what each job
waits for (and whether a failure there is allowed), the build's notify, and whether Buildkite refuses
either. Differences are told by field, so one change on hundreds of jobs is one line.
"""

from __future__ import annotations

import json

from pipegen.frozen import frozen
from pipegen.importer.upload_model.build import Build, Job
from pipegen.importer.upload_model.interpolation import show

SHOWN = 70  # characters of a value in a message


@frozen
class Finding:
    step: str
    field: str  # a field, or: step, kind, group, label, depends_on, notify, refused
    expected: object
    got: object


def match(original: Build, rendered: Build) -> dict[str, str]:
    """Original uid -> rendered uid."""
    by_key = {job.key: uid for uid, job in rendered.jobs.items() if job.key is not None}
    original_keys = {job.key for job in original.jobs.values() if job.key is not None}
    fresh: dict[str, list[str]] = {}
    for uid, job in rendered.jobs.items():
        if job.key is None or job.key not in original_keys:
            fresh.setdefault(job.kind, []).append(uid)
    out: dict[str, str] = {}
    for uid, job in original.jobs.items():
        if job.key is not None and job.key in by_key:
            out[uid] = by_key[job.key]
        elif fresh.get(job.kind):  # a group's key pipegen writes as its steps' depends_on is such a job
            out[uid] = fresh[job.kind].pop(0)
    return out


def compare(original: Build, rendered: Build) -> list[Finding]:
    found = [Finding("the build", "refused", why, None) for why in original.refused]
    found += [Finding("the build", "refused", None, why) for why in rendered.refused]
    found += [Finding("the build", "unknown", why, None) for why in original.unknown + rendered.unknown]
    pairs = match(original, rendered)
    for uid, job in original.jobs.items():
        if uid not in pairs:
            found.append(Finding(_name(job), "step", job.kind, None))
            continue
        found += _job(job, rendered.jobs[pairs[uid]], pairs, (original, rendered))
    taken = set(pairs.values())
    found += [Finding(_name(job), "step", None, job.kind) for uid, job in rendered.jobs.items() if uid not in taken]
    if sorted(map(_canon, original.notify)) != sorted(map(_canon, rendered.notify)):  # as a set of lines
        found.append(Finding("the build", "notify", original.notify, rendered.notify))
    return found


def _job(want: Job, have: Job, pairs: dict[str, str], names: tuple[Build, Build]) -> list[Finding]:
    out: list[Finding] = []
    name = _name(want)
    if want.kind != have.kind:
        out.append(Finding(name, "kind", want.kind, have.kind))
    if want.label is not None and want.label != have.label:
        out.append(Finding(name, "label", want.label, have.label))
    if (pairs.get(want.group, "?") if want.group else None) != have.group:
        out.append(Finding(name, "group", want.group, have.group))
    deps = {pairs.get(d, d): a for d, a in want.deps.items()}
    if deps != have.deps and want.kind != "group":  # a group's dependencies are its steps' (compared there)
        out.append(Finding(name, "depends_on", _names(want.deps, names[0]), _names(have.deps, names[1])))
    for field in sorted(set(want.fields) | set(have.fields)):
        if not _same(want.fields.get(field), have.fields.get(field)):
            out.append(Finding(name, field, want.fields.get(field), have.fields.get(field)))
    return out


def _same(first: object, second: object) -> bool:
    """Equal and of the same types throughout (True is not 1, "1" is not 1)."""
    if type(first) is not type(second):
        return False
    if isinstance(first, dict) and isinstance(second, dict):
        return first.keys() == second.keys() and all(_same(v, second[k]) for k, v in first.items())
    if isinstance(first, (list, tuple)) and isinstance(second, (list, tuple)):
        return len(first) == len(second) and all(_same(a, b) for a, b in zip(first, second, strict=True))
    return first == second


def _canon(data: object) -> str:
    return json.dumps(data, sort_keys=True, default=repr)


def _names(deps: dict[str, bool], build: Build) -> list[str]:
    return sorted(_name(build.jobs[d]) + (" (allow_failure)" if allow else "") if d in build.jobs else d
                  for d, allow in deps.items())


def _name(job: Job) -> str:
    label = job.label if isinstance(job.label, str) else None
    return job.key or label or job.uid


def describe(findings: list[Finding], limit: int = 40) -> list[str]:
    """One line per field that differs: how many jobs, which, and the first one's two values."""
    by_field: dict[str, list[Finding]] = {}
    for finding in findings:
        by_field.setdefault(finding.field, []).append(finding)
    lines: list[str] = []
    for field, items in by_field.items():
        if field in ("step", "refused", "unknown"):
            lines += [f"  {_step_line(f)}" for f in items]
            continue
        steps = ", ".join(f.step for f in items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")
        first = items[0]
        lines.append(f"  {field}: differs on {len(items)} step{'s' * (len(items) != 1)} ({steps}); "
                     f"'{first.step}' had {_show(first.expected)}, renders {_show(first.got)}")
    return lines[:limit] + ([f"  ... and {len(lines) - limit} more lines"] if len(lines) > limit else [])


def _step_line(finding: Finding) -> str:
    if finding.field == "unknown":
        return f"the model of Buildkite cannot tell what this does, so nothing is proven: {finding.expected}"
    if finding.field == "refused":
        side = "the original" if finding.expected is not None else "the rendered pipeline"
        return f"Buildkite refuses {side}: {finding.expected or finding.got}"
    if finding.got is None:
        return f"step '{finding.step}' ({finding.expected}): not in the rendered pipeline"
    return f"step '{finding.step}' ({finding.got}): rendered, not in the input"


def shown_data(data: object) -> object:
    """Symbolic values as the interpolation text that means them."""
    if isinstance(data, tuple):
        return show(data)
    if isinstance(data, dict):
        return {str(k): shown_data(v) for k, v in data.items()}
    return [shown_data(v) for v in data] if isinstance(data, list) else data


def _show(data: object) -> str:
    if data is None:
        return "nothing"
    text = show(data) if isinstance(data, tuple) else data if isinstance(data, str) else \
        json.dumps(shown_data(data), sort_keys=True, default=repr)
    text = text.replace("\n", "\\n")
    return repr(text[:SHOWN] + "...") if len(text) > SHOWN else repr(text)
