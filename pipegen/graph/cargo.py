"""The path-dependency closure of a Cargo crate. Pure: the caller reads the manifests.

A crate's `Cargo.toml` names the crates it builds with; those in the repository have a `path =`
(in `[dependencies]`, `[dev-dependencies]`, `[build-dependencies]` and their `[target.*.]` forms), or
`workspace = true` with the path in the workspace's `[workspace.dependencies]` (the nearest
`Cargo.toml` above with a `[workspace]` table). A change to any file of a crate in the closure, to
the workspace manifest or to `Cargo.lock` can change what the root crate builds.
"""

from __future__ import annotations

import posixpath
import sys
from collections.abc import Callable
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package
    import tomli as tomllib

from pipegen.errors import DeclarationError
from pipegen.graph.derived import ROOT, Link
from pipegen.model import Location

Reader = Callable[[str], "str | None"]  # a tracked file's text, None when absent
TABLES = ("dependencies", "dev-dependencies", "build-dependencies")


def cargo_closure(crate: str, read: Reader, where: Location) -> list[Link]:
    """The crate folders the crate reaches (itself first), the workspace manifest and lock file."""
    crate = posixpath.normpath(crate.strip("/")) if crate.strip("/") else ""
    links: dict[str, Link] = {crate: (crate, crate, ROOT)}
    queue = [crate]
    workspace: tuple[str, dict[str, Any]] | None = None
    for folder in queue:
        manifest = _manifest(folder, read, where, links[folder])
        if workspace is None:
            workspace = _workspace(folder, read, where)
            if workspace is not None:
                for name in ("Cargo.toml", "Cargo.lock"):  # normpath: "./x" -> "x", a ".hidden/" folder kept
                    extra = posixpath.normpath(posixpath.join(workspace[0], name))
                    if extra not in links and read(extra) is not None:
                        links[extra] = (extra, folder, "workspace of")
        for target in _path_dependencies(folder, manifest, workspace):
            if target not in links:
                links[target] = (target, folder, "path dependency of")
                queue.append(target)
    return list(links.values())


def _manifest(folder: str, read: Reader, where: Location, link: Link) -> dict[str, Any]:
    path = posixpath.join(folder, "Cargo.toml")
    text = read(path)
    if text is None:
        whose = "derive root" if link[2] == ROOT else f"path dependency of {link[1]}"
        raise DeclarationError(f"cargo: {path} is not a tracked file ({whose} '{folder}')", where,
                               "name a crate folder (one holding Cargo.toml) under derive: cargo:")
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise DeclarationError(f"cargo: {path} is not valid TOML: {exc}", where, f"fix {path}") from None


def _workspace(folder: str, read: Reader, where: Location) -> tuple[str, dict[str, Any]] | None:
    """The nearest folder at or above `folder` whose Cargo.toml has a [workspace] table, and that table."""
    current = folder
    while True:
        text = read(posixpath.join(current, "Cargo.toml"))
        if text is not None and "[workspace" in text:
            table = _manifest(current, read, where, (current, current, ROOT)).get("workspace")
            if isinstance(table, dict):
                return current, table
        if not current:
            return None
        current = posixpath.dirname(current)


def _path_dependencies(folder: str, manifest: dict[str, Any], workspace: tuple[str, dict[str, Any]] | None
                       ) -> list[str]:
    tables = [manifest.get(name) for name in TABLES]
    for target in (manifest.get("target") or {}).values():
        if isinstance(target, dict):
            tables += [target.get(name) for name in TABLES]
    shared = (workspace[1].get("dependencies") or {}) if workspace else {}
    out = []
    for table in tables:
        for name, spec in (table or {}).items() if isinstance(table, dict) else ():
            if not isinstance(spec, dict):
                continue
            if isinstance(spec.get("path"), str):
                out.append(_join(folder, spec["path"]))
            elif spec.get("workspace") is True and workspace and isinstance(shared.get(name), dict) \
                    and isinstance(shared[name].get("path"), str):
                out.append(_join(workspace[0], shared[name]["path"]))
    return out


def _join(folder: str, path: str) -> str:
    joined = posixpath.normpath(posixpath.join(folder, path))
    return "" if joined == "." else joined
