"""Package discovery, which pyproject.toml cannot express alone: every folder under pipegen/
is found (a new subpackage or data folder ships without editing anything), and the top-level
templates/ folder ships as pipegen/templates. All other metadata is in pyproject.toml."""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["pipegen", "pipegen.*"], exclude=["*.__pycache__"]),
              "pipegen.templates"],
    package_dir={"pipegen.templates": "templates"},
)
