"""`pipegen render`: select, render, validate; print only a valid pipeline (the I/O edge)."""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Mapping, Sequence

from pipegen.errors import UsageError
from pipegen.model import Declarations
from pipegen.selection.inputs import Input, template_inputs
from pipegen.render.pipeline import render_pipeline
from pipegen.render.plan import LimitError


def main(args: Any, *, unselected: str | None, templates: str | None, annotation_file: str | None,
         environ: Mapping[str, str] | None = None) -> int:
    from pipegen.selection.chain import select, warn_if_untrusted

    from pipegen.hardware.build_context import BuildInfo

    environ = os.environ if environ is None else environ
    decl, selection = select(args, environ, _template_inputs(args.root, templates) if templates else None)
    warn_if_untrusted(selection)
    try:
        rendered = render_pipeline(decl, selection, unselected=unselected, templates=templates,
                                   build=BuildInfo.from_environ(environ))
    except LimitError as exc:
        if annotation_file:
            from pipegen.render.annotate import annotation

            _write(annotation_file, annotation(exc.plan, error=str(exc.message)))
        raise
    if annotation_file:
        _write(annotation_file, rendered.annotation)
    out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
    if out is not None:
        sys.stdout.flush()
        out.write(rendered.text.encode("utf-8"))
        out.flush()
    else:  # pragma: no cover - a text-only stream (tests)
        sys.stdout.write(rendered.text)
    return 0


def _template_inputs(root: str, templates: str) -> Callable[[Declarations], Sequence[Input]]:
    """The --templates folder as pipegen inputs: a family's template shapes the jobs placed on it."""

    def inputs(decl: Declarations) -> Sequence[Input]:
        from pipegen.hardware.inventory import load_inventory
        from pipegen.hardware.placement import jobs

        if not os.path.isdir(templates):
            return ()  # rendering says so
        folder = os.path.relpath(os.path.realpath(templates), os.path.realpath(root)).replace(os.sep, "/")
        names = [os.path.relpath(os.path.join(d, f), templates).replace(os.sep, "/")
                 for d, _, files in os.walk(templates) for f in files]
        inventory = load_inventory(decl)
        uses: dict[str, set[str]] = {f.template.template_file: set() for f in inventory.families}
        for job in jobs(decl, inventory):
            if job.uses_plugin:
                uses[job.family.template.template_file].add(job.step.key)
        return template_inputs(folder, names, uses)

    return inputs


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write --annotation {path}: {exc.strerror}", fix="pass a writable path") from None
