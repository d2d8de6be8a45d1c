"""Where a repository's declarations are: its root, its config, the files of a steps folder.

Small and import-light: the CLI finds the root with it before any command runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from pipegen.errors import DeclarationError, UsageError
from pipegen.model import DeclarationWarning, Location

DEFAULT_CONFIGS = (".buildkite/pipegen.yaml", ".buildkite/ci_config.yaml")
IMPORTED_CONFIG = ".buildkite/pipegen/pipegen.yaml"  # where `pipegen import` writes by default: named, not read
DEFAULT_INVENTORY = ".buildkite/hardware.yaml"  # the hardware inventory of pipegen's own format
STEPS_SUFFIXES = (".yaml", ".yml")  # Buildkite reads both


def repository_root(start: str = ".") -> str:
    """The folder pipegen works in, found as git finds its work tree: the nearest of `start` and its
    parents holding `.git` or a CI config (`start` as given when that is `start` itself: "." from the current
    folder; "." when none does)."""
    here = os.path.abspath(start)
    folder = here
    while True:
        if os.path.exists(os.path.join(folder, ".git")) or any(
                os.path.isfile(os.path.join(folder, c)) for c in DEFAULT_CONFIGS):
            return start if folder == here else folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return "."
        folder = parent


def find_config(root: str, config: str | None, environ: Mapping[str, str]) -> str:
    """The config file to read, relative to `root` or absolute."""
    from pipegen.bounded_read import not_a_file

    chosen = config or environ.get("PIPEGEN_CONFIG")
    if chosen:
        if os.path.isfile(os.path.join(root, chosen)):
            return chosen
        if os.path.isfile(chosen):  # relative to the current folder, as a shell completes it from a subfolder
            return os.path.abspath(chosen)
        what = not_a_file(os.path.join(root, chosen)) or not_a_file(chosen)
        raise UsageError(f"config {chosen} is {what}, not a file" if what else f"config file not found: {chosen}",
                         fix="pass an existing file to --config")
    for candidate in DEFAULT_CONFIGS:
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
        what = not_a_file(os.path.join(root, candidate))
        if what:  # said, not passed over: "no CI configuration found" would send the user looking elsewhere
            raise UsageError(f"{candidate} is {what}, not a file",
                             fix=f"make {candidate} the config file, or pass --config PATH")
    imported = os.path.isfile(os.path.join(root, IMPORTED_CONFIG))
    raise UsageError(
        f"no CI configuration found in {os.path.abspath(root)} (looked for {' and '.join(DEFAULT_CONFIGS)})",
        fix=f"pass --config {IMPORTED_CONFIG} (what pipegen import wrote) or set PIPEGEN_CONFIG to it" if imported
        else "run pipegen at the repository root, or pass --config PATH",
    )


def rel(root: str, path: str) -> str:
    """`path` relative to `root` with '/' separators; absolute when it lies outside."""
    full = path if os.path.isabs(path) else os.path.join(root, path)
    out = os.path.relpath(full, root)
    return full if out.startswith("..") else out.replace(os.sep, "/")


def steps_files(root: str, entry: str, where: Location, suffixes: tuple[str, ...],
                warnings: list[DeclarationWarning]) -> list[str]:
    """A steps entry: one file, or every file with one of `suffixes` below a folder (sorted: stable
    output). Any other YAML file there would be skipped without a word: each gets a warning."""
    full = os.path.join(root, entry)
    if os.path.isfile(full):
        return [rel(root, entry)]
    head = re.split(r"[*?[]", entry)[0]
    if head != entry and not os.path.exists(full):
        folder = f"'{head.rsplit('/', 1)[0]}'" if "/" in head else "that holds the steps files"
        raise DeclarationError(f"steps entry {entry!r} is a glob: an entry is a file or a folder", where,
                               f"name the folder {folder}: every {' or '.join('*' + x for x in suffixes)} file "
                               "below it is read")
    if not os.path.isdir(full):
        raise DeclarationError(f"steps path not found: {entry}", where, "fix the path or create it")
    found = []
    reads = " or ".join(f"*{x}" for x in suffixes)
    seen: set[str] = set()
    # A folder linked into the steps folder holds steps too; each real folder is read once (a link loop ends).
    for folder, dirs, files in os.walk(full, followlinks=True):
        if os.path.realpath(folder) in seen:
            dirs.clear()
            continue
        seen.add(os.path.realpath(folder))
        dirs.sort()
        for name in sorted(files):
            # os.walk's paths already start with `root`: made absolute so rel() does not join it twice.
            path = rel(root, os.path.abspath(os.path.join(folder, name)))
            if name.endswith(suffixes):
                found.append(path)
            elif name.lower().endswith(STEPS_SUFFIXES):  # a script or a note beside the steps is no declaration
                warnings.append(DeclarationWarning(
                    Location(path), "ignored-file",
                    f"not loaded: the steps folder {entry} is read for {reads} files only",
                    f"rename it to {suffixes[0]}, or move it out of the folder"))
    if not found:  # steps files moved elsewhere: no step would exist, and no build would say so
        raise DeclarationError(f"steps folder '{entry}' holds no steps file ({reads})", where,
                               "name the folder that holds the steps files, or add one")
    return found


def link_aliases(root: str, paths: list[str]) -> tuple[tuple[str, str], ...]:
    """(path git names, path as read) for declaration files read through a symbolic link: git names the file
    by its target (`ci/steps/a.yaml` read through the link `ci/steps` -> `shared/steps` is `shared/steps/a.yaml`),
    and a change of the link itself (retargeted) is a change of the link's path."""
    top = os.path.realpath(root)
    out: list[tuple[str, str]] = []
    for path in paths:
        if os.path.isabs(path):
            continue
        real = os.path.relpath(os.path.realpath(os.path.join(root, path)), top).replace(os.sep, "/")
        if real != path and not real.startswith("../"):
            out.append((real, path))
        parts = path.split("/")
        for end in range(1, len(parts) + 1):
            link = "/".join(parts[:end])
            if os.path.islink(os.path.join(root, link)):
                out.append((link, path))
    return tuple(dict.fromkeys(out))
