"""Grouping uncovered files by folder (check/uncovered.py): the invariants, on generated trees."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipegen.check.file_index import FileIndex
from pipegen.check.uncovered import group_by_folder

SEGMENT = st.sampled_from(["a", "b", "c", "a.py", "b.py", "x.py"])
PATH = st.lists(SEGMENT, min_size=1, max_size=4).map("/".join)


@given(st.sets(PATH, min_size=1, max_size=30), st.data())
def test_every_uncovered_file_lands_in_one_group_that_names_what_to_add(paths, data):
    # A path may not also be a folder of another path (git cannot track both).
    files = sorted(p for p in paths if not any(q.startswith(p + "/") for q in paths))
    index = FileIndex(files)
    covered_files = data.draw(st.sets(st.sampled_from(files)))
    covered = index.mask(covered_files)
    missing = [p for p in files if p not in covered_files]
    groups = group_by_folder(missing, covered, index)
    grouped = [p for members in groups.values() for p in members]
    assert sorted(grouped) == missing  # each once
    for (folder, whole), members in groups.items():
        inside = [p for p in files if p.startswith(folder)]
        if whole:
            # Adding the folder covers these files and nothing it covers already; its parent would not do.
            assert folder and not any(p in covered_files for p in inside)
            assert set(members) == {p for p in missing if p.startswith(folder)}
            parent = folder.rstrip("/").rpartition("/")[0]
            assert not parent or any(p in covered_files for p in files if p.startswith(parent + "/"))
        elif folder:
            # A partly covered folder: its own files, directly in it.
            assert all(p.rpartition("/")[0] + "/" == folder for p in members)
            assert any(p in covered_files for p in inside)
        else:
            assert all("/" not in p for p in members)  # the root cannot be added: its files are listed


def test_a_path_deeper_than_pythons_recursion_limit_is_grouped_and_its_conftests_found():
    """The folders above a file are walked in a loop: a test 1,200 folders deep (git tracks it; `check` on such a
    repository was tried by hand) raised RecursionError, a traceback from `check` (in memory here: pytest's own
    clean-up of tmp_path recurses as deep)."""
    from pipegen.check.coverage import Conftests

    deep = "/".join(["d"] * 1200)
    files = sorted(["conftest.py", f"{deep}/conftest.py", f"{deep}/helper.py", f"{deep}/test_deep.py", "d/x.py"])
    index = FileIndex(files)
    assert Conftests(index).with_test(f"{deep}/test_deep.py") == [f"{deep}/test_deep.py", f"{deep}/conftest.py",
                                                                  "conftest.py"]
    missing = [f"{deep}/helper.py", f"{deep}/test_deep.py"]
    assert group_by_folder(missing, index.mask(["d/x.py", f"{deep}/conftest.py"]), index) == {(deep + "/", False): missing}
    assert group_by_folder(missing, index.mask(["d/x.py"]), index) == {("d/d/", True): missing}
