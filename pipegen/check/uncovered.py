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
from collections.abc import Callable, Sequence

from pipegen.check.entries import declared
from pipegen.check.file_index import FileIndex
from pipegen.check.findings import Finding
from pipegen.model import Step

Chain = Callable[[str], list[str]]  # an uncovered file -> one import chain from the step's tests to it


def group_by_folder(missing: Sequence[str], covered: int, index: FileIndex) -> dict[tuple[str, bool], list[str]]:
    """Uncovered files by (folder, whether no file in it is covered); folders end in "/", "" is the root."""
    clean: dict[str, bool] = {}  # folder -> holds no covered file
    groups: dict[tuple[str, bool], list[str]] = {}
    parent, files = None, []  # `missing` is sorted: a folder's files come together
    at = 0
    while at < len(missing):
        path = missing[at]
        folder = path.rpartition("/")[0]
        if folder != parent:
            parent = folder
            top = None
            for above, below in index.lineage(folder):
                empty = clean.get(above)
                if empty is None:
                    empty = clean[above] = not below & covered
                if empty:
                    top = above
                    break
            if top is not None:  # every missing file below `top` is in this group, and they come together:
                end = bisect.bisect_left(missing, top + "0", at)  # take them at once ("0" follows "/")
                groups.setdefault((top + "/", True), []).extend(missing[at:end])
                at, parent = end, None
                continue
            files = groups.setdefault((folder + "/" if folder else "", False), [])
        files.append(path)
        at += 1
    return groups


def not_covered(step: Step, group: tuple[str, bool], paths: list[str], chain: Chain) -> Finding:
    folder, whole = group
    first = paths[0]
    how = _how(chain(first))
    key = declared(step)
    if len(paths) == 1:
        parent = first.rpartition("/")[0]
        message = f"a change to {first} would not run step '{key}' ({how})"
        fix = f"add '{parent + '/' if parent else first}' or '{first}' to its source_file_dependencies"
    else:
        where = f"in {folder}" if whole else f"directly in {folder}" if folder else "at the repository root"
        message = (f"a change to any of {len(paths)} files {where} (e.g. {first}, {paths[1]}) would not run "
                   f"step '{key}' ({first}: {how})")
        fix = (f"add '{folder}' to its source_file_dependencies" if whole else
               f"add these files to its source_file_dependencies ({folder} also holds files it covers)" if folder
               else "add these files to its source_file_dependencies")
    return Finding("import-not-covered", "warning", step.location, message, fix, key, tuple(paths))


def _how(chain: list[str]) -> str:
    if len(chain) == 1:
        return "pytest loads this conftest.py for its tests"
    importers = chain[:-1]
    if len(importers) > 4:  # long chains: the test, its first import, the direct importer
        importers = importers[:2] + [f"({len(importers) - 3} more)"] + importers[-1:]
    return "imported via " + " -> ".join(importers)
