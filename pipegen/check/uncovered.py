"""import-not-covered, one finding per (step, uncovered folder). Pure.

On vLLM's tree a step's tests reach hundreds of files its entries do not
cover; one finding per file (81,604 of them) hid the signal "a change to X
would not run step Y". Files are grouped under the highest folder none of
whose files selects the step (the folder to add to the step's entries), or
under their own folder when it is partly covered. Each finding names the
count, two examples, the import chain of the first, and every file
(`files`, listed by JSON and by text with --detail).
"""

from __future__ import annotations

import bisect
import posixpath
from collections.abc import Callable, Sequence

from pipegen.check.entries import declared
from pipegen.check.file_index import FileIndex
from pipegen.check.findings import Finding
from pipegen.model import Step

Chain = Callable[[str], list[str]]  # an uncovered file -> one import chain from the step's tests to it


def group_by_folder(missing: Sequence[str], covered: int, index: FileIndex) -> dict[tuple[str, bool], list[str]]:
    """Uncovered files by (folder, whether no file in it is covered); folders end in "/", "" is the root."""
    clean: dict[str, bool] = {}  # folder -> holds no covered file
    group_of: dict[str, tuple[str, bool]] = {}  # a file's folder -> its group

    def uncovered(folder: str) -> bool:
        if folder not in clean:
            clean[folder] = not index.prefix(folder + "/") & covered
        return clean[folder]

    def group(parent: str) -> tuple[str, bool]:
        if parent not in group_of:
            parts = parent.split("/") if parent else []
            ancestors = ("/".join(parts[:n]) for n in range(1, len(parts) + 1))
            top = next((f for f in ancestors if uncovered(f)), None)
            group_of[parent] = (top + "/", True) if top else (parent + "/" if parent else "", False)
        return group_of[parent]

    groups: dict[tuple[str, bool], list[str]] = {}
    parent, files = None, []  # `missing` is sorted: a folder's files come together
    at = 0
    while at < len(missing):
        path = missing[at]
        folder = path.rpartition("/")[0]
        if folder != parent:
            parent = folder
            files = groups.setdefault(group(folder), [])
            top, whole = group_of[folder]
            if whole:  # every missing file below `top` is in this group, and they come together: take them at once
                end = bisect.bisect_left(missing, top[:-1] + "0", at)  # "0" follows "/"
                files += missing[at:end]
                at, parent = end, None
                continue
        files.append(path)
        at += 1
    return groups


def not_covered(step: Step, group: tuple[str, bool], paths: list[str], chain: Chain) -> Finding:
    folder, whole = group
    first = paths[0]
    how = _how(chain(first))
    if len(paths) == 1:
        parent = posixpath.dirname(first)
        message = f"a change to {first} would not run step '{declared(step)}' ({how})"
        fix = f"add '{parent + '/' if parent else first}' or '{first}' to its source_file_dependencies"
    else:
        where = f"in {folder}" if whole else f"directly in {folder}" if folder else "at the repository root"
        message = (f"a change to any of {len(paths)} files {where} (e.g. {', '.join(paths[:2])}) would not run "
                   f"step '{declared(step)}' ({first}: {how})")
        fix = (f"add '{folder}' to its source_file_dependencies" if whole else
               f"add these files to its source_file_dependencies ({folder} also holds files it covers)" if folder
               else "add these files to its source_file_dependencies")
    return Finding("import-not-covered", "warning", step.location, message, fix, declared(step), tuple(paths))


def _how(chain: list[str]) -> str:
    if len(chain) == 1:
        return "pytest loads this conftest.py for its tests"
    importers = chain[:-1]
    if len(importers) > 4:  # long chains: the test, its first import, the direct importer
        importers = importers[:2] + [f"({len(importers) - 3} more)"] + importers[-1:]
    return "imported via " + " -> ".join(importers)
