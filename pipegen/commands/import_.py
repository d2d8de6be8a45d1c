"""`pipegen import FILE...`: read Buildkite pipelines, write pipegen's declarations, render them back with
`--all` and compare with the input as Buildkite reads both (the I/O edge; the work is pipegen/importer/)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from pipegen.commands.options import ImportOptions
from pipegen.errors import PipegenError, UsageError
from pipegen.importer.nodes import Pipeline

if TYPE_CHECKING:
    from pipegen.importer.convert import Imported
    from pipegen.importer.upload_model.verdict import Finding

WRITTEN = ("pipegen.yaml", "hardware.yaml", "steps")


def main(args: ImportOptions, out: TextIO) -> int:
    from pipegen.declarations.discover import repository_root
    from pipegen.importer import expand
    from pipegen.importer.convert import convert
    from pipegen.importer.message import report

    out_dir = os.path.abspath(args.out_dir or _default_dir(args.files[0]))
    root = os.path.abspath(repository_root(out_dir if os.path.isdir(out_dir) else os.path.dirname(out_dir)))
    _refuse_overwrite(out_dir, args.force)
    missing: list[str] = []
    notes: list[str] = []
    pipelines = [_read(path, root, notes) for path in args.files]
    folders = _folders(root, args.environ)
    for pipeline in pipelines:
        expand.splice_uploads(pipeline, lambda paths: _read_upload(paths, root, notes), missing, notes)
        expand.monorepo_diff(pipeline, folders, missing, notes)
        expand.if_changed(pipeline, folders, missing, notes)
    relative = os.path.relpath(out_dir, root).replace(os.sep, "/")
    result = convert(pipelines, relative)
    result.missing[:0], result.notes[:0] = missing, notes
    _write(out_dir, result.files, args.force)
    differences = _render_back(root, f"{relative}/pipegen.yaml", result, [_text(p) for p in args.files],
                               [_display(p, root) for p in args.files])
    out.write(report(result, differences, relative, [_display(p, root) for p in args.files]))
    return 1 if result.missing or differences else 0


def _default_dir(first: str) -> str:
    """The .buildkite/ beside the first file (the file's own folder when that is one)."""
    folder = os.path.dirname(os.path.abspath(first))
    return folder if os.path.basename(folder) == ".buildkite" else os.path.join(folder, ".buildkite")


def _display(path: str, root: str) -> str:
    relative = os.path.relpath(os.path.abspath(path), root)
    return path if relative.startswith("..") else relative.replace(os.sep, "/")


def _read(path: str, root: str, notes: list[str]) -> Pipeline:
    from pipegen.declarations.yamlio import load_file
    from pipegen.importer.nodes import read_pipeline

    display = _display(path, root)
    return read_pipeline(load_file(path, display, duplicates=notes), display, notes)


def _read_upload(paths: Sequence[str], root: str, notes: list[str]) -> Pipeline | str:
    """The first of the files an upload names that exists in the repository (the agent's default list)."""
    for path in paths:
        if os.path.isfile(os.path.join(root, path)):
            try:
                return _read(os.path.join(root, path), root, notes)
            except PipegenError as exc:
                return f"the uploaded {path} does not read: {exc}"
    return f"it uploads {paths[0]}, which is not a file in the repository (a generated pipeline?); not importable"


def _folders(root: str, environ: Mapping[str, str]) -> list[str]:
    """The repository's folders (from git's tracked files; from the disk outside a git repository)."""
    from pipegen.git import index_blobs

    try:
        files = list(index_blobs(root, environ)[0])
    except PipegenError:
        files = []
        for folder, subs, names in os.walk(root):
            subs[:] = [s for s in subs if s != ".git"]
            files += [os.path.relpath(os.path.join(folder, n), root).replace(os.sep, "/") for n in names]
    return sorted({"/".join(parts[:i]) for parts in (f.split("/") for f in files) for i in range(1, len(parts))})


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Multi-line strings (scripts, `if` conditions) as literal blocks, as people write them."""


_Dumper.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|" if "\n" in text.strip("\n") else None))


def _refuse_overwrite(out_dir: str, force: bool) -> None:
    existing = [name for name in WRITTEN if os.path.exists(os.path.join(out_dir, name))]
    if existing and not force:
        raise UsageError(f"{os.path.join(out_dir, existing[0])} exists: pipegen import never overwrites "
                         "declarations", fix="pass --force to replace them, or --out DIR for another folder")


def _write(out_dir: str, files: dict[str, dict[str, Any]], force: bool) -> None:
    steps = os.path.join(out_dir, "steps")
    if force and os.path.isdir(steps):
        shutil.rmtree(steps)  # a steps file left from before would load beside the new ones
    try:
        for name, data in files.items():
            path = os.path.join(out_dir, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120))
    except OSError as exc:
        raise UsageError(f"cannot write {exc.filename}: {exc.strerror}", fix="pass a writable --out DIR") from None


def _render_back(root: str, config: str, result: Imported, texts: list[str], names: list[str]) -> list[Finding]:
    """The written declarations rendered with --all, and both the input files and the rendered text uploaded
    in the model of Buildkite (importer/upload_model/): what differs. A failure to load or render is one
    more thing not carried over."""
    from pipegen.dialects.load import load
    from pipegen.importer.upload_model.build import build
    from pipegen.importer.upload_model.verdict import compare
    from pipegen.model import ChangeSet, Options
    from pipegen.render.rendered import place, render_pipeline
    from pipegen.selection.decide import decide

    try:
        decl = load(root, config, {})
        selection = decide(decl, ChangeSet((), reason="pipegen import"), Options(run_all="--all"))
        text = render_pipeline(decl, selection, place(decl)).text
    except PipegenError as exc:
        result.missing.append(f"the written declarations do not render: {exc}")
        return []
    original = build(list(zip(names, texts, strict=True)), lambda path: _upload_text(path, root))
    return compare(original, build([("the rendered pipeline", text)]))


def _text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def _upload_text(path: str, root: str) -> str | None:
    """A file an upload names, for the model: one inside the repository only (as the import follows)."""
    target = os.path.realpath(os.path.join(root, path))
    inside = target.startswith(os.path.realpath(root) + os.sep) and not os.path.isabs(path)
    return _text(target) if inside and os.path.isfile(target) else None
