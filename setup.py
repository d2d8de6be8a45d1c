"""Package discovery, which pyproject.toml cannot express alone: every folder under pipegen/
is found (a new subpackage or data folder ships without editing anything), and the top-level
templates/ folder ships as pipegen/templates. All other metadata is in pyproject.toml.

Building the wheel also compiles, once, what every run would otherwise compile: Buildkite's schema
to a Python module (pipegen/buildkite/compiled_schema.py) and the shipped templates to Python
modules (pipegen/render/compiled_templates/), both byte-compiled on install like pipegen's own code.
Each carries a stamp of what it was made from; pipegen compiles in process where the stamp differs.
"""

import os
import sys

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py


class BuildCompiled(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install compiles in process
            return
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from pipegen.buildkite.schema import COMPILED_MODULE
        from pipegen.buildkite.schema import write_compiled as write_schema
        from pipegen.render.templates import COMPILED, write_compiled

        write_schema(os.path.join(self.build_lib, *COMPILED_MODULE.split(".")) + ".py")
        templates = os.path.join(self.build_lib, "pipegen", "render", COMPILED)
        os.makedirs(templates, exist_ok=True)
        write_compiled(templates)


setup(
    packages=[*find_namespace_packages(include=["pipegen", "pipegen.*"], exclude=["*.__pycache__"]),
              "pipegen.templates"],
    package_dir={"pipegen.templates": "templates"},
    cmdclass={"build_py": BuildCompiled},
)
