"""Property: the imported selection never skips a step the original `if_changed` ran. Random steps with
if_changed globs (strings, lists, include/exclude), depends_on among them, some behind an upload step with an
if_changed of its own; random changed files; Buildkite's reading (the agent's zzglob, transcribed in
test_path_rules.zz_regex) against `pipegen select --files-from` on the imported declarations."""

from __future__ import annotations

import json
import re

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipegen.cli import cli

from ..commands.test_import import OUT, run
from ..helpers import git_repo
from .test_path_rules import zz_regex

FILES = ["src/a.go", "src/sub/b.go", "docs/x.md", "README.md", "lib/c.py", "go.mod"]
GLOBS = ["src/**", "src/*.go", "**.md", "*.md", "docs/*", "lib/**", "go.mod", "src/sub/*", "**/*.py"]


def matches(pattern: str, path: str) -> bool:
    return re.fullmatch(zz_regex(pattern, crossing=True), path) is not None


def agent_runs(rule: object, changed: list[str]) -> bool:
    """The agent runs a step whose if_changed matches a changed file that no exclude matches."""
    if rule is None:
        return True
    include = rule.get("include") if isinstance(rule, dict) else rule
    exclude = rule.get("exclude", []) if isinstance(rule, dict) else []
    include, exclude = ([x] if isinstance(x, str) else x for x in (include, exclude))
    return any(any(matches(p, f) for p in include) and not any(matches(p, f) for p in exclude) for f in changed)


rules = st.one_of(st.none(), st.sampled_from(GLOBS), st.lists(st.sampled_from(GLOBS), min_size=1, max_size=2),
                  st.fixed_dictionaries({"include": st.lists(st.sampled_from(GLOBS), min_size=1, max_size=2),
                                         "exclude": st.sampled_from(GLOBS)}))


@st.composite
def pipeline(draw):
    steps, uploaded = [], []
    for n in range(draw(st.integers(1, 5))):
        step = {"key": f"s{n}", "command": f"make {n}"}
        rule = draw(rules)
        if rule is not None:
            step["if_changed"] = rule
        if n and draw(st.booleans()):
            step["depends_on"] = f"s{draw(st.integers(0, n - 1))}"
        (uploaded if draw(st.booleans()) and "depends_on" not in step else steps).append(step)
    upload_rule = draw(rules)
    if uploaded:
        upload = {"label": "up", "command": "buildkite-agent pipeline upload .buildkite/more.yml"}
        steps.append({**upload, **({"if_changed": upload_rule} if upload_rule is not None else {})})
    return steps, uploaded, upload_rule


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=pipeline(), changed=st.lists(st.sampled_from(FILES), min_size=1, max_size=3, unique=True))
def test_the_imported_selection_never_skips_what_if_changed_ran(tmp_path_factory, drawn, changed):
    steps, uploaded, upload_rule = drawn
    files = {".buildkite/pipeline.yml": yaml.safe_dump({"steps": steps}), **dict.fromkeys(FILES, "x\n")}
    if uploaded:
        files[".buildkite/more.yml"] = yaml.safe_dump({"steps": uploaded})
    root = git_repo(tmp_path_factory.mktemp("n") / "r", files)
    assert run(root, ".buildkite/pipeline.yml").exit_code in (0, 1)
    (root / "changed.txt").write_text("\n".join(changed) + "\n")
    result = CliRunner().invoke(cli, ["select", "--root", str(root), "--config", f"{OUT}/pipegen.yaml",
                                      "--files-from", str(root / "changed.txt"), "--format", "json"],
                                env={"PIPEGEN_CACHE_DIR": ""})
    actions = {s["key"]: s["action"] for s in json.loads(result.stdout)["steps"]}
    upload_ran = agent_runs(upload_rule, changed)
    for step in steps + uploaded:
        ran = agent_runs(step.get("if_changed"), changed) and (step not in uploaded or upload_ran)
        if ran and step.get("key") in actions:
            assert actions[step["key"]] == "run", (step, changed, actions)
