"""Property: a random pipeline of several files (env definitions referencing each other and the uploader's
environment, `$` in commands, env, agents and plugin options, waits, blocks, groups, keys, depends_on across
files) imports with exit 0, and the model of Buildkite (importer/upload_model/) finds the rendered pipeline
equal to the input; a reference no text can carry exits 1 naming it. Through the real CLI in a git repo."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..commands.test_import import run
from ..helpers import git_repo

NAMES = ["QUEUE", "TOOL", "DIR", "MODE"]
UPLOADER = ["BUILDKITE_BRANCH", "HOME_Q", "CI_IMAGE"]


@st.composite
def env_block(draw):
    """A file's env: each value a literal, the uploader's variable with a default, or an earlier one's."""
    out: dict[str, str] = {}
    for name in draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3)):
        choices = [f"lit-{name.lower()}", f"${{{draw(st.sampled_from(UPLOADER))}:-d{len(out)}}}",
                   f"${{{name}:-own}}"] + [f"${k}-x" for k in out]
        out[name] = draw(st.sampled_from(choices))
    return out


@st.composite
def reference(draw, env):
    names = list(env) + UPLOADER
    name = draw(st.sampled_from(names))
    return draw(st.sampled_from([f"${name}", f"${{{name}}}", f"${{{name}:-w}}", f"$${name}", "plain"]))


@st.composite
def steps_file(draw, index, earlier_keys):
    env = draw(env_block())
    steps: list[object] = []
    keys: list[str] = []
    for n in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["command", "command", "wait", "block", "group"])) if n else "command"
        key = f"f{index}s{n}"
        if kind == "wait":
            steps.append("wait")
            continue
        if kind == "block":
            steps.append({"block": f"go {key}?", "key": key})
            keys.append(key)
            continue
        step = {"key": key, "command": f"echo {draw(reference(env))}",
                "env": {"V": draw(reference(env))}, "agents": {"queue": draw(reference(env))},
                "plugins": [{"docker#v5.0.0": {"image": draw(reference(env))}}]}
        targets = earlier_keys + keys
        if targets and draw(st.booleans()):
            step["depends_on"] = draw(st.sampled_from(targets))
        if kind == "group":
            steps.append({"group": f"G{key}", "key": f"g{key}", "steps": [step]})
        else:
            steps.append(step)
        keys.append(key)
    data = {"env": env, "steps": steps} if env else {"steps": steps}
    return yaml.safe_dump(data, sort_keys=False), keys


@st.composite
def pipelines(draw):
    files, keys = {}, []
    for index in range(draw(st.integers(1, 3))):
        text, mine = draw(steps_file(index, keys))
        files[f"p{index}.yml"] = text
        keys += mine
    return files


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=pipelines())
def test_random_multi_file_pipelines_import_proven_equal(tmp_path_factory, files):
    root = git_repo(tmp_path_factory.mktemp("p") / "r", {f".buildkite/{n}": t for n, t in files.items()})
    result = run(root, *[f".buildkite/{n}" for n in files])
    assert result.exit_code == 0, (files, result.output)
    assert "Proven" in result.output


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=pipelines(), name=st.sampled_from(NAMES))
def test_a_substring_of_a_files_own_variable_is_named(tmp_path_factory, files, name):
    own = {"env": {name: "${HOME_Q:-abcdef}"}, "steps": [{"key": "sub", "command": f"echo ${{{name}:1:2}}"}]}
    files = {**files, "sub.yml": yaml.safe_dump(own)}
    root = git_repo(tmp_path_factory.mktemp("p") / "r", {f".buildkite/{n}": t for n, t in files.items()})
    result = run(root, *[f".buildkite/{n}" for n in files])
    assert result.exit_code == 1, result.output
    assert f"'${{{name}:1:2}}' over the file's own env" in result.output
