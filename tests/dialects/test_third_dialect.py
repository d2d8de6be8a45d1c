"""A third dialect is a new module: the engine loads, selects and renders through the interface alone."""

from __future__ import annotations

import types
from collections.abc import Sequence

import yaml

from pipegen.declarations.assemble import finish
from pipegen.dialects import load as registry
from pipegen.dialects.interface import Dialect, Source, any_key
from pipegen.model import Declarations, Location, Settings, Step

from ..helpers import all_steps, assert_valid, git_repo, invoke


def toy_dialect() -> Dialect:
    """`toy: {LABEL: PATH}` in the config: one step per label, run when its path changes; the page in reverse
    label order."""
    def load(source: Source) -> Declarations:
        toy = source.top["toy"]
        steps = [Step(location=toy.loc(label), key=label.lower(), label=label, group="",
                      commands=(f"echo {label}",), dependencies=(path,)) for label, path in toy.items()]
        return finish(source.root, steps, Settings(), "toy", [source.path], [])

    def page_order(steps: Sequence[Step]) -> list[Step]:
        return sorted(steps, key=lambda s: s.label, reverse=True)

    module = types.ModuleType("toy")
    module.__dict__.update(NAME="toy", claims=lambda top: "toy" in top, load=load, check_keys=any_key,
                           page_order=page_order)
    return module  # type: ignore[return-value]


def test_a_third_dialect_is_one_module(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "DIALECTS", (toy_dialect(), *registry.DIALECTS))
    root = git_repo(tmp_path, {".buildkite/pipegen.yaml": "toy: {Alpha: src/a, Beta: src/b, Gamma: src/c}\n",
                               "src/a/x.py": "", "src/b/x.py": "", "src/c/x.py": ""})
    decl = registry.load(str(root))
    assert (decl.layout, [s.key for s in decl.steps]) == ("toy", ["alpha", "beta", "gamma"])
    assert decl.steps[1].location == Location(".buildkite/pipegen.yaml", 1, 21)

    result = invoke(root, "select", "--format", "json", files="src/b/y.py\n")
    actions = {d["key"]: d["action"] for d in yaml.safe_load(result.output)["steps"]}
    assert actions == {"alpha": "block", "beta": "run", "gamma": "block"}

    result = invoke(root, "render", files="src/b/y.py\n")
    assert result.exit_code == 0, result.output
    keys = [s.get("key") for s in all_steps(assert_valid(result.output))]
    assert keys == ["block-gamma", "gamma", "beta", "block-alpha", "alpha"]  # the dialect's order, not the file's
