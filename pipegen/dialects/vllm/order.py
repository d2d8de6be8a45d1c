"""The order of the pipeline's page as vLLM's generator sorts it (the vLLM dialect's page_order). Pure.

ci-infra's pipeline_generator.py and step.group_steps put the groups in name order (Python's:
uppercase before lowercase) and each group's steps in label order. The generator's AMD group
collects the mirrors and AMD-device steps of each group it walks, in the order it walks them: here
the group each came from, in the order the steps files load (the generator's os.walk follows the
directory order of its checkout, which differs from one filesystem to the next), then the label of
the step it came from.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipegen.declarations.steps_file import AMD_GROUP
from pipegen.model import Step


def by_name(steps: Sequence[Step]) -> list[Step]:
    """Groups by name, each group's steps by label (the AMD group's as its steps' sources)."""
    by_key = {step.key: step for step in steps}
    file_groups: dict[str, str] = {}  # a steps file's group, for its steps moved to the AMD group
    for step in steps:
        if step.group != AMD_GROUP:
            file_groups.setdefault(step.location.file, step.group)

    def source(step: Step) -> tuple[str, str]:
        """The group the generator walks the step in, and the label it sorts it by there."""
        origin = by_key.get(step.origin) if step.origin else None
        if origin is not None:  # an AMD mirror: where its declared step is
            return origin.group, origin.label
        if step.group == AMD_GROUP:  # an AMD test of its own: sorted by its label as declared
            declared = step.label.removeprefix("AMD: ").removesuffix(f" ({step.device})")
            return file_groups.get(step.location.file, step.group), declared
        return step.group, step.label

    walked: dict[str, int] = {}
    for step in steps:
        walked.setdefault(source(step)[0], len(walked))
    return sorted(steps, key=lambda s: (s.group, walked[source(s)[0]], source(s)[1]))
