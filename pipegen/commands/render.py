"""`pipegen render`: select, render, validate; print only a valid pipeline (the I/O edge)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TextIO

from pipegen import atomic
from pipegen.commands.annotating import post, style_of
from pipegen.commands.options import RenderOptions
from pipegen.commands.selecting import load_declarations, select_for, warn_if_untrusted
from pipegen.commands.terminal import warn
from pipegen.errors import PipegenError, UsageError
from pipegen.render.annotate import annotation, failure
from pipegen.render.page import LimitError
from pipegen.render.rendered import Placement, Rendered, place, render_pipeline
from pipegen.selection.inputs import Input, template_inputs


def main(args: RenderOptions, out: TextIO) -> int:
    """Print the pipeline (bytes as written, where `out` has a buffer); write and post the annotation."""
    try:
        rendered, warned = _render(args)
    except PipegenError as exc:
        if args.annotate:  # the build page says why nothing was uploaded
            page = exc.page if isinstance(exc, LimitError) else None
            body = annotation(page, error=exc.message) if page else failure(str(exc))
            post(body, args.annotate, style_of(failed=True, warned=False), args)
        raise
    if args.annotate:
        post(rendered.annotation, args.annotate, style_of(failed=False, warned=warned), args)
    binary = getattr(out, "buffer", None)
    if binary is not None:
        out.flush()
        binary.write(rendered.text.encode("utf-8"))
        binary.flush()
    else:  # a text-only stream
        out.write(rendered.text)
    return 0


def _render(args: RenderOptions) -> tuple[Rendered, bool]:
    """The rendered pipeline (validated), the --annotation file written; whether a WARNING was said."""
    from pipegen.hardware.build_spec import BuildInfo

    environ, templates, annotation_file = args.environ, args.templates, args.annotation_file
    decl = load_declarations(args)
    placement = place(decl, BuildInfo.from_environ(environ))  # once: the templates' inputs and the plan read it
    selection = select_for(decl, args, _template_inputs(args.root, templates, placement) if templates else ())
    warned = bool(warn_if_untrusted(selection, args.terminal))
    try:
        rendered = render_pipeline(decl, selection, placement, unselected=args.unselected, templates=templates)
    except LimitError as exc:
        if annotation_file:
            _write(annotation_file, annotation(exc.page, error=str(exc.message)))
        raise
    if annotation_file:
        _write(annotation_file, rendered.annotation)
    if rendered.page.over_limit:  # said where a build log shows it, not only in the annotation
        warn(args.terminal, f"more than {rendered.page.limit} jobs: {len(rendered.page.over_limit)} unselected "
             "steps were left out of the upload (only selected steps run; the annotation lists them)")
        warned = True
    return rendered, warned


def _template_inputs(root: str, templates: str, placement: Placement) -> Sequence[Input]:
    """The --templates folder as pipegen inputs: a family's template shapes the jobs placed on it."""
    if not os.path.isdir(templates):
        return ()  # rendering says so
    folder = os.path.relpath(os.path.realpath(templates), os.path.realpath(root)).replace(os.sep, "/")
    names = [os.path.relpath(os.path.join(d, f), templates).replace(os.sep, "/")
             for d, _, files in os.walk(templates) for f in files]
    uses: dict[str, set[str]] = {f.template.template_file: set() for f in placement.inventory.families}
    for job in placement.jobs:
        if job.uses_plugin:
            uses[job.family.template.template_file].add(job.step.key)
    return template_inputs(folder, names, uses)


def _write(path: str, text: str) -> None:
    try:
        atomic.write_text(path, text)  # whole or not at all; a link at the path is replaced, not followed
    except OSError as exc:
        raise UsageError(f"cannot write --annotation {path}: {exc.strerror}", fix="pass a writable path") from None
