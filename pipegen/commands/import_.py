"""`pipegen import FILE...`: read Buildkite pipelines, write pipegen's declarations, render them back with
`--all` and compare with the input as Buildkite reads both (the I/O edge; the work is pipegen/importer/)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import yaml

from pipegen.bounded_read import read_bytes
from pipegen.commands.options import ImportOptions
from pipegen.errors import EXIT_FINDINGS, EXIT_OK, PipegenError, UsageError
from pipegen.importer.nodes import Pipeline
from pipegen.importer.said import Said
from pipegen.model import Location

if TYPE_CHECKING:
    from pipegen.importer.convert import Imported
    from pipegen.importer.upload_model.verdict import Finding

MARK = "# Written by pipegen import; `pipegen import --force` replaces this folder.\n"


def main(args: ImportOptions, out: TextIO) -> int:
    from pipegen.declarations.discover import repository_root
    from pipegen.importer import expand
    from pipegen.importer.convert import convert
    from pipegen.importer.message import report

    out_dir = os.path.abspath(args.out_dir or _default_dir(args.files[0]))
    root = os.path.abspath(repository_root(out_dir if os.path.isdir(out_dir) else os.path.dirname(out_dir)))
    _refuse_overwrite(out_dir, args.force)
    missing: list[Said] = []
    notes: list[Said] = []
    pipelines = [_read(path, root, notes) for path in args.files]
    folders = _folders(root, args.environ)
    for pipeline in pipelines:
        expand.splice_uploads(pipeline, lambda paths: _read_upload(paths, root, notes), missing, notes)
        expand.monorepo_diff(pipeline, folders, missing, notes)
        expand.if_changed(pipeline, folders, missing, notes)
    relative = os.path.relpath(out_dir, root).replace(os.sep, "/")
    result = convert(pipelines, relative, args.paths_field)
    result.missing[:0], result.notes[:0] = missing, notes
    _write(out_dir, result.files)
    differences = _render_back(root, f"{relative}/pipegen.yaml", result, [_text(p) for p in args.files],
                               [_display(p, root) for p in args.files], args.paths_field)
    inputs = [_display(p, root) for p in args.files]
    code = EXIT_FINDINGS if result.missing or differences else EXIT_OK
    if args.fmt == "json":
        from pipegen.importer.import_json import import_json, places
        from pipegen.json_output import dumps

        out.write(dumps(import_json(result, differences, relative, inputs, code, places(pipelines))))
    else:
        out.write(report(result, differences, relative, inputs))
    return code


def _default_dir(first: str) -> str:
    """.buildkite/pipegen/ beside the first file: a folder of pipegen's own, so it never meets a repository's
    own .buildkite/steps/ or scripts (the first file's folder when that is .buildkite/)."""
    folder = os.path.dirname(os.path.abspath(first))
    return os.path.join(folder if os.path.basename(folder) == ".buildkite" else os.path.join(folder, ".buildkite"),
                        "pipegen")


def _display(path: str, root: str) -> str:
    relative = os.path.relpath(os.path.abspath(path), root)
    return path if relative.startswith("..") else relative.replace(os.sep, "/")


def _read(path: str, root: str, notes: list[Said]) -> Pipeline:
    from pipegen.declarations.yamlio import load_file
    from pipegen.importer.nodes import read_pipeline

    display, duplicates = _display(path, root), list[str]()
    data = load_file(path, display, duplicates=duplicates)
    notes += [_in(display, text) for text in duplicates]
    return read_pipeline(data, display, notes)


def _in(file: str, text: str) -> Said:
    """A sentence the YAML reader made of a key in `file` (`file:line:column: message`), split after the
    file's name, which is known here (a name may hold `:` or `: `)."""
    line, column, message = text[len(file) + 1:].split(":", 2)
    return Said(Location(file, int(line), int(column)), message[1:])


def _read_upload(paths: Sequence[str], root: str, notes: list[Said]) -> Pipeline | str:
    """The first of the files an upload names that exists in the repository (the agent's default list); a
    path that leaves the repository (`../x.yml`, an absolute path, a link out) is not followed."""
    for path in paths:
        if not _inside(path, root):
            return f"it uploads {path}, which is outside the repository; pipegen import follows only files in it"
        if os.path.isfile(os.path.join(root, path)):
            try:
                return _read(os.path.join(root, path), root, notes)
            except PipegenError as exc:
                return f"the uploaded {path} does not read: {exc}"
    return f"it uploads {paths[0]}, which is not a file in the repository (a generated pipeline?); not importable"


def _inside(path: str, root: str) -> bool:
    real_root = os.path.realpath(root)
    return not os.path.isabs(path) and os.path.realpath(os.path.join(root, path)).startswith(real_root + os.sep)


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
    """The output folder is pipegen's own: absent, or (with --force) holding only files pipegen import wrote."""
    if not os.path.lexists(out_dir):
        return
    if not force:
        raise UsageError(f"{out_dir} exists: pipegen import never overwrites declarations",
                         fix="pass --force to replace what pipegen import wrote there, or --out DIR for another folder")
    foreign = _foreign(out_dir)
    if foreign is not None:
        raise UsageError(f"{foreign}: --force replaces only files pipegen import wrote, and this is not one of them",
                         fix="move it out of the folder, or pass --out DIR for another folder")


def _foreign(out_dir: str) -> str | None:
    """The first entry of the folder that pipegen import did not write (a link, or a file without its mark)."""
    if os.path.islink(out_dir) or not os.path.isdir(out_dir):
        return f"{out_dir} ({'a link' if os.path.islink(out_dir) else 'not a folder'})"
    for folder, subs, names in os.walk(out_dir):
        for name in sorted(subs + names):
            path = os.path.join(folder, name)
            if os.path.islink(path) or not (os.path.isdir(path) or os.path.isfile(path)):
                return f"{path} (a link or not a regular file)"
            if os.path.isfile(path) and not _marked(path):
                return path
    return None


def _marked(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(MARK)) == MARK.encode()
    except OSError:
        return False


def _write(out_dir: str, files: dict[str, dict[str, Any]]) -> None:
    """The whole folder at once (atomic.replace_folder): on any failure the old one is byte-identical."""
    from pipegen.atomic import replace_folder

    texts = {name: MARK + yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
             for name, data in files.items()}
    try:
        replace_folder(out_dir, texts)
    except OSError as exc:
        raise UsageError(f"cannot write {exc.filename or out_dir}: {exc.strerror or exc}",
                         fix="pass a writable --out DIR (a real folder, not a link)") from None


def _render_back(root: str, config: str, result: Imported, texts: list[str], names: list[str],
                 consumed: str | None) -> list[Finding]:
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
        result.missing.append(Said(None, f"the written declarations do not render: {exc}"))
        return []
    original = build(list(zip(names, texts, strict=True)), lambda path: _upload_text(path, root),
                     consumed=(consumed,) if consumed else ())
    return compare(original, build([("the rendered pipeline", text)]))


def _text(path: str) -> str:
    return read_bytes(path).decode("utf-8", "replace")  # regular files within the bound (Refused: an OSError)


def _upload_text(path: str, root: str) -> str | None:
    """A file an upload names, for the model: one inside the repository only (as the import follows)."""
    target = os.path.join(root, path)
    if not (_inside(path, root) and os.path.isfile(target)):
        return None
    try:
        return _text(target)
    except OSError:  # unreadable, or over the read bound: the model cannot follow it
        return None
