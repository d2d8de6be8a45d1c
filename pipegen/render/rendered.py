"""Declarations + decisions -> a Rendered pipeline: place, lay out the page, write through the templates, check.

  place()          every step on its hardware, once per command (render's --templates
                   inputs and the page both read it);
  page.py          decisions + jobs -> the pipeline's steps in order (buildkite_steps.py);
  templates.py     the page -> YAML text;
  output_check.py  the text parsed back and validated against Buildkite's schema,
                   unique keys, known depends_on targets and the job limit; any
                   problem is an OutputError and nothing is printed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipegen.buildkite.limits import JOB_LIMIT
from pipegen.errors import OutputError
from pipegen.hardware.inventory import load_for_build
from pipegen.hardware.placement import jobs
from pipegen.hardware.types import Inventory, Job
from pipegen.model import Declarations, Selection
from pipegen.render.annotate import annotation
from pipegen.render.blame import blame
from pipegen.render.output_check import check
from pipegen.render.page import Page, build_page
from pipegen.render.templates import to_yaml
from pipegen.states import Unselected

if TYPE_CHECKING:
    from pipegen.hardware.build_context import BuildContext
    from pipegen.hardware.build_spec import BuildInfo


class Placement:
    """Every step on the hardware of one build: the inventory, the build's context and the jobs, in step order."""

    def __init__(self, inventory: Inventory, context: BuildContext | None, jobs: list[Job]):
        self.inventory = inventory
        self.context = context
        self.jobs = jobs


def place(decl: Declarations, build: BuildInfo | None = None) -> Placement:
    """Load the inventory for this build (build_spec.BuildInfo) and place every step on it."""

    inventory, context = load_for_build(decl, build)
    return Placement(inventory, context, jobs(decl, inventory))


class Rendered:
    """The validated text of a pipeline, the data it reads as (parsed by the check), and the page it came
    from (for the annotation)."""

    def __init__(self, text: str, page: Page, data: dict[str, Any]):
        self.text = text
        self.page = page
        self.data = data

    @property
    def annotation(self) -> str:
        return annotation(self.page)


def render_pipeline(decl: Declarations, selection: Selection, placement: Placement, *,
                    unselected: Unselected | None = None,
                    templates: str | None = None, limit: int = JOB_LIMIT) -> Rendered:
    """Declarations + decisions + the jobs placed -> validated YAML and its annotation. Pure but for
    reading templates."""
    result = build_page(decl, selection, placement.jobs, unselected=unselected, limit=limit,
                           build=placement.context)
    text = to_yaml(result, templates)
    try:
        data = check(text, limit, decl.settings.external_steps)
    except OutputError as exc:
        raise blame(exc, text, result.entries, templates) from None
    return Rendered(text=text, page=result, data=data)
