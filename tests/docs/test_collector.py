"""The collector's own rules (tests/docs/): each one can fail, and says where and why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.docs.blocks import PageError, page_setup, parse
from tests.docs.console import matches
from tests.docs.runner import NOT_RUN_REASONS, run_page, sandbox

FENCE = "```"


def outcome(tmp_path: Path, page: str) -> str | None:
    """The failure message of running `page` (Markdown; ''' stands for a fence), None when it passes."""
    try:
        return run_page(parse(page.replace("'''", FENCE), "page.md"), sandbox(tmp_path))
    except PageError as error:
        return str(error)


def test_a_matching_console_block_passes(tmp_path):
    assert outcome(tmp_path, "Text.\n\n'''console\n$ echo one && echo two\none\ntwo\n'''\n") is None


def test_a_wrong_expected_line_fails_with_page_line_command_and_diff(tmp_path):
    failed = outcome(tmp_path, "# Title\n\n'''console\n$ echo ok\nok\n$ printf 'a\\nb\\n'\na\nc\n'''\n")
    assert failed is not None
    assert failed.startswith("page.md:6: $ printf 'a\\nb\\n'\n")
    assert "-c\n+b" in failed  # the page's line, then the actual one


def test_ellipsis_lines_and_within_a_line():
    assert matches(("a", "...", "z"), ("a", "b", "c", "z"))
    assert matches(("a", "...", "z"), ("a", "z"))
    assert matches(("...",), ())
    assert matches(("took ...s, ... steps",), ("took 1.2s, 3 steps",))
    assert not matches(("a", "...", "z"), ("a", "b"))
    assert not matches(("took ...s",), ("took 1.2 s", "more"))
    assert not matches(("a.c",), ("abc",))  # only '...' is a wildcard


def test_ellipsis_in_a_page(tmp_path):
    assert outcome(tmp_path, "'''console\n$ seq 1 100\n1\n...\n100\n$ echo took 3.2s\ntook ...s\n'''\n") is None
    assert outcome(tmp_path / "b", "'''console\n$ seq 1 100\n1\n...\n99\n'''\n") is not None


def test_a_non_zero_exit_needs_its_exit_line(tmp_path):
    failed = outcome(tmp_path, "'''console\n$ echo no; exit 2\nno\n'''\n")
    assert failed is not None and "exit 2, the page says 0" in failed
    assert outcome(tmp_path / "b", "'''console\n$ echo no; exit 2\nno\n[exit 2]\n'''\n") is None
    failed = outcome(tmp_path / "c", "'''console\n$ echo no; exit 2\nno\n[exit 1]\n'''\n")
    assert failed is not None and "exit 2, the page says 1" in failed


def test_stdout_and_stderr_are_compared_together_trailing_spaces_ignored(tmp_path):
    assert outcome(tmp_path, "'''console\n$ echo out; echo 'err  ' >&2\nout\nerr\n'''\n") is None


def test_not_run_reasons_are_an_allow_list(tmp_path):
    block = "'''console\n$ false\n'''\n"
    assert outcome(tmp_path, f"<!-- not-run: {NOT_RUN_REASONS[0]} -->\n{block}") is None
    failed = outcome(tmp_path / "b", f"<!-- not-run: it is slow -->\n{block}")
    assert failed is not None and "not-run reason 'it is slow' is not allowed" in failed


def test_misplaced_and_misspelt_markers_are_errors(tmp_path):
    failed = outcome(tmp_path, "<!-- file: a.yaml -->\n\n'''yaml\na: 1\n'''\n")
    assert failed == "page.md:1: a marker must stand on the line right before its fenced block"
    failed = outcome(tmp_path / "b", "<!-- not_run: needs a GPU -->\n'''console\n$ false\n'''\n")
    assert failed is not None and "unknown marker 'not_run'" in failed
    assert outcome(tmp_path / "c", "<!-- note: any comment -->\n'''console\n$ true\n'''\n") is None


def test_a_file_marker_writes_the_block_in_the_pages_folder(tmp_path):
    page = ("<!-- file: ci/steps/a.yaml -->\n'''yaml\nsteps: []\n'''\n\n"
            "'''console\n$ cat ci/steps/a.yaml && ls -A\nsteps: []\nci\n'''\n")
    assert outcome(tmp_path, page) is None
    failed = outcome(tmp_path / "b", "<!-- file: ../a.yaml -->\n'''yaml\na: 1\n'''\n")
    assert failed is not None and "must be a path inside the page's folder" in failed


def test_yaml_must_load(tmp_path):
    failed = outcome(tmp_path, "'''yaml\nsteps: [a\n'''\n")
    assert failed is not None and failed.startswith("page.md:1: the YAML does not load")
    failed = outcome(tmp_path / "b", "<!-- file: a.yaml -->\n'''yaml\na: b: c\n'''\n")
    assert failed is not None and "does not load" in failed


def test_a_shell_block_is_one_strict_script(tmp_path):
    assert outcome(tmp_path, "'''bash\nx=1\necho $x > out\n'''\n'''console\n$ cat out\n1\n'''\n") is None
    for script in ("false\necho after", "false | true", "echo $UNSET_VARIABLE"):
        failed = outcome(tmp_path / str(hash(script)), f"'''sh\n{script}\n'''\n")
        assert failed is not None and "the sh block exited 1" in failed, script


def test_each_page_starts_in_an_empty_folder_and_cd_does_not_carry_over(tmp_path):
    assert outcome(tmp_path, "'''console\n$ ls -A\n$ mkdir sub && cd sub\n$ ls -A\nsub\n'''\n") is None


def test_the_sandbox_has_a_git_identity_pipegen_and_a_recording_agent(tmp_path):
    page = ("'''console\n$ git init -q && git commit -q --allow-empty -m first && git log --format='%an %s' && "
            "git branch --show-current\nDocs Reader first\nmain\n"
            "$ command -v pipegen\n...bin/pipegen\n"
            "$ echo 'steps: []' | buildkite-agent pipeline upload\n'''\n")
    assert outcome(tmp_path, page) is None
    assert Path(sys.executable).parent.joinpath("pipegen").exists()
    assert (tmp_path / "agent-calls" / "0.args").read_text() == "pipeline\nupload\n"
    assert (tmp_path / "agent-calls" / "0.stdin").read_text() == "steps: []\n"


def test_a_command_with_output_outside_a_console_block_fails(tmp_path):
    failed = outcome(tmp_path, "'''text\n$ pipegen select\nsomething\n'''\n")
    assert failed == "page.md:1: a command a user types: make it a console or bash block (then it runs)"
    failed = outcome(tmp_path / "c", "Text.\n\n'''\npipegen/\n  cli.py\npipegen run --dry-run  # the plan\n'''\n")
    assert failed == "page.md:3: a command a user types: make it a console or bash block (then it runs)"
    assert outcome(tmp_path / "b", "'''text\nany text\n'''\n'''python\nraise SystemExit(1)\n'''\n") is None


def test_fences_in_lists_and_unclosed_fences():
    blocks = parse("1. Step:\n\n    ```console\n    $ echo a\n    a\n    ```\n", "p.md")
    assert [(b.line, b.lang, b.text) for b in blocks] == [(3, "console", "$ echo a\na\n")]
    with pytest.raises(PageError, match="p.md:1: this fence is never closed"):
        parse("```yaml\na: 1\n", "p.md")



CONFIG = "<!-- file: .buildkite/pipegen.yaml -->\n'''yaml\nsteps: [.buildkite/steps]\n'''\n"
STEPS = "steps:\n  - label: Unit\n    commands: [pytest]\n    source_file_dependencies: [src/]\n"


def test_declarations_are_validated_by_the_schema_and_loaded(tmp_path):
    steps = f"<!-- file: .buildkite/steps/unit.yaml -->\n'''yaml\n{STEPS}'''\n"
    assert outcome(tmp_path, CONFIG + steps) is None
    failed = outcome(tmp_path / "b", CONFIG.replace("steps: [", "step: [") + steps)
    assert failed is not None and failed.startswith("page.md:2: .buildkite/pipegen.yaml is refused by pipegen's "
                                                    "JSON Schema of a config file")
    failed = outcome(tmp_path / "c", CONFIG + steps.replace("commands:", "comands:"))
    assert failed is not None and "page.md:6: .buildkite/steps/unit.yaml is refused" in failed and "comands" in failed
    failed = outcome(tmp_path / "d", CONFIG)  # the schema cannot know the folder is empty; the loader does
    assert failed is not None and failed.startswith("page.md:2: pipegen cannot load .buildkite/pipegen.yaml")


def test_other_yaml_is_not_read_as_a_declaration_and_text_blocks_are_not_validated(tmp_path):
    steps = f"<!-- file: .buildkite/steps/unit.yaml -->\n'''yaml\n{STEPS}'''\n"
    other = "<!-- file: .buildkite/pipeline.yml -->\n'''yaml\nsteps: [{command: make, comands: x}]\n'''\n"
    broken = "<!-- file: bad/pipegen.yaml -->\n'''text\nstep: [x]\n'''\n"
    assert outcome(tmp_path, CONFIG + steps + other + broken) is None


def test_an_unmarked_block_that_names_a_declaration_file_is_validated(tmp_path):
    assert outcome(tmp_path, f"'''yaml\n# .buildkite/steps/unit.yaml: the unit tests\n{STEPS}'''\n") is None
    failed = outcome(tmp_path / "b", "'''yaml\n# .buildkite/pipegen.yaml\nsteps: [ci]\nbase_brunch: main\n'''\n")
    assert failed is not None and failed.startswith("page.md:1: .buildkite/pipegen.yaml is refused by pipegen's "
                                                    "JSON Schema of a config file") and "base_brunch" in failed
    failed = outcome(tmp_path / "c", f"'''yaml\n# ci/steps/unit.yml\n{STEPS.replace('label', 'lable')}'''\n")
    assert failed is not None and "ci/steps/unit.yml is refused" in failed
    assert outcome(tmp_path / "d", "'''yaml\n# .buildkite/pipeline.yml\nsteps: [{command: make, comands: x}]\n'''\n") is None


def test_a_hardware_inventory_is_validated(tmp_path):
    inventory = "default: cpu\nfamilies:\n  cpu: {vendor: cpu, queue: cpu}\n"
    assert outcome(tmp_path, f"<!-- file: .buildkite/hardware.yaml -->\n'''yaml\n{inventory}'''\n") is None
    failed = outcome(tmp_path / "b", f"'''yaml\n# .buildkite/hardware.yaml\n{inventory.replace('queue', 'queeu')}'''\n")
    assert failed is not None and ".buildkite/hardware.yaml is refused by pipegen's JSON Schema of a hardware file" \
        in failed and "queeu" in failed


CHECKOUT_PAGE = ("<!-- page: checkout -->\n# Title\n\n'''console\n$ git status --short | wc -l && git log --oneline"
                 " | wc -l && ls tests/docs/test_collector.py\n0\n1\ntests/docs/test_collector.py\n'''\n")


def test_a_checkout_page_runs_in_a_committed_copy_of_the_repository(tmp_path):
    root = Path(__file__).resolve().parent.parent.parent
    page = CHECKOUT_PAGE.replace("'''", FENCE)
    assert page_setup(page, "page.md") == "checkout"
    assert run_page(parse(page, "page.md"), sandbox(tmp_path, checkout=root)) is None
    failed = run_page(parse(page, "page.md"), sandbox(tmp_path / "b"))  # the marker ignored: an empty folder
    assert failed is not None and "not a git repository" in failed


def test_a_page_marker_only_on_the_first_line_with_a_known_setup():
    assert page_setup("# Title\n<!-- page: checkout -->\n", "page.md") is None
    with pytest.raises(PageError, match="page.md:2: a page marker must be the page's first line"):
        parse("# Title\n<!-- page: checkout -->\n", "page.md")
    with pytest.raises(PageError, match="page.md:1: unknown page setup 'clone'"):
        page_setup("<!-- page: clone -->\n# Title\n", "page.md")
