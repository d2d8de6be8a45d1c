"""The shipped templates read only attributes their step class has (render/buildkite_steps.py): the coupling
mypy cannot see, read from each template's Jinja syntax tree. A renamed attribute fails here, not in a user's
pipeline."""

from __future__ import annotations

import os

import pytest
from jinja2 import Environment, nodes

from pipegen.hardware.types import Template
from pipegen.render.buildkite_steps import BlockStep, CommandStep, DeclaredStep, GroupStep
from pipegen.render.page import Page
from pipegen.render.templates import builtin_templates

# template -> the class of each variable it reads attributes of (several: each has them)
READS = {
    "command.j2": {"item": CommandStep, "plugins": str},  # plugins: the family's plugin, rendered
    "docker.j2": {"item": CommandStep, "plugin": Template},
    "kubernetes.j2": {"item": CommandStep},
    "kubernetes-patch.j2": {"item": CommandStep},
    "plain.j2": {},
    "block.j2": {"item": BlockStep},
    "step.j2": {"item": DeclaredStep},
    "pipeline.j2": {"entry": GroupStep, "plan": Page, "item": (CommandStep, BlockStep, DeclaredStep)},
}


def attributes(cls: type | tuple[type, ...]) -> set[str]:
    if isinstance(cls, tuple):
        return set.intersection(*(attributes(one) for one in cls))
    names = {name for klass in cls.__mro__ for name in getattr(klass, "__slots__", ())}
    names |= {name for klass in cls.__mro__ for name in vars(klass) if not name.startswith("_")}
    return names | set(getattr(cls, "__dataclass_fields__", {}))


def read(name: str) -> set[tuple[str, str]]:
    with open(os.path.join(builtin_templates(), name), encoding="utf-8") as file:
        tree = Environment().parse(file.read())
    return {(node.node.name, node.attr) for node in tree.find_all(nodes.Getattr) if isinstance(node.node, nodes.Name)}


@pytest.mark.parametrize("name", sorted(READS))
def test_each_attribute_a_template_reads_is_its_classs(name):
    found = read(name)
    missing = {(var, attr) for var, attr in found if var in READS[name] and attr not in attributes(READS[name][var])}
    assert not missing, f"{name} reads {sorted(missing)}, which its class does not have"
    assert {var for var, _ in found} <= set(READS[name]), f"{name} reads a variable this test does not know"


def test_each_step_class_names_a_shipped_template():
    for cls in (CommandStep, BlockStep, DeclaredStep):
        assert os.path.isfile(os.path.join(builtin_templates(), f"{cls.type}.j2")), cls
