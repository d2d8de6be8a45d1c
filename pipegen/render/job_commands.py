"""What a job runs and what its hardware template adds to it. Pure.

`job_commands` builds the command lines of one job: `cd working_dir`, the
template's setup (multi-GPU setup only where the job has the GPUs), a banner
before each command where the template asks for them (`job: {banners: true}`),
the command itself; the build context may then rewrite
them (quotes, build variables, wrappers around each command: build_context.py). The job's
other fields are resolved in job_fields.py.
"""

from __future__ import annotations

import re
import shlex

from pipegen.buildkite.upload_escape import Dollars
from pipegen.hardware.build_context import BuildContext
from pipegen.hardware.types import Job
from pipegen.model import Step

NO_BUILD = BuildContext(values={})
_BLANK = re.compile(r"[\x00-\x1f\x7f-\x9f'\"$\\\u2028\u2029]+")
# Deleted from a preview shown inside double quotes: quotes, `$`, and what the shell would still
# expand or escape there (backticks, backslashes).
_DELETE = re.compile(r"['\"$`\\]")


def banner(index: int, total: int, command: str, preview: str = "blank") -> str:
    """`echo '+++ ... Command (i/n): <first 80 characters>'`, safe to run whatever the command holds."""
    return f"echo '+++ :test_tube: Command ({index}/{total}): {preview_text(command, preview)}'"


def preview_text(command: str, preview: str = "blank") -> str:
    if preview == "delete":
        return _DELETE.sub("", command[:80])
    return _BLANK.sub(" ", command[:80]).strip()


def setup_commands(step: Step, job: Job) -> list[str]:
    if step.no_plugin:
        return []
    gpus = job.gpus * max(job.nodes, 1)
    return [c.run for c in job.template.setup if gpus >= c.min_gpus]


def job_commands(step: Step, job: Job, dollars: Dollars, build: BuildContext | None = None) -> list[str]:
    """The command lines of one job, as the agent runs them."""
    build = build or NO_BUILD
    template = job.template
    multi_node = job.nodes > 1
    commands = [dollars(c) for c in step.commands]
    cd = [f"cd {dollars(step.working_dir)}"] if step.working_dir and not multi_node else []
    setup = setup_commands(step, job)
    if template.wrap and not multi_node:
        inner = " && ".join(cd + commands)
        return list(step.prelude) + setup + [template.wrap.replace("{commands}", shlex.quote(inner))]
    wraps = [w for w in build.wraps if job.vendor not in w.except_vendors]
    lines = setup + [line for w in wraps for line in w.before]
    for index, command in enumerate(commands, 1):
        wrapped = command
        for wrap in wraps:  # the build's wrappers, innermost first
            wrapped = wrap.around(wrapped, index, len(commands), preview_text(command, build.preview))
        if template.job.banners:
            lines.append(banner(index, len(commands), command, build.preview))
        lines.append(wrapped)
    lines += [line for w in wraps for line in w.after]
    if build.quotes == "double" and not step.num_nodes:
        lines = [line.replace("'", '"') for line in lines]
    return list(step.prelude) + cd + [build.substitute(line) for line in lines]
