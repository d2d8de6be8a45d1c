"""`pipegen render`: select, render, validate; print only a valid pipeline (the I/O edge)."""

from __future__ import annotations

import sys
from typing import Any, Mapping

from pipegen.errors import UsageError
from pipegen.render.pipeline import render_pipeline
from pipegen.render.plan import LimitError


def main(args: Any, *, unselected: str | None, templates: str | None, annotation_file: str | None,
        environ: Mapping[str, str] | None = None) -> int:
    from pipegen.selection.chain import select, warn_if_untrusted

    decl, selection = select(args, environ)
    warn_if_untrusted(selection)
    try:
        rendered = render_pipeline(decl, selection, unselected=unselected, templates=templates)
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


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write --annotation {path}: {exc.strerror}", fix="pass a writable path") from None
