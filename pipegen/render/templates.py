"""The page (page.py) -> YAML text through the Jinja templates (templates/*.j2, or a user's --templates DIR
that overrides any of them).

No user string reaches the YAML raw: every `{{ expression }}` goes out through
`scalar()` unless it is explicitly marked safe (yaml_writer.py says how).
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING

from pipegen.errors import UsageError
from pipegen.render.page import Page
from pipegen.render.yaml_writer import Safe, block, flow, scalar

if TYPE_CHECKING:  # jinja2 is imported when a pipeline is rendered, not with this module
    from jinja2 import BaseLoader, Environment

COMPILED = "compiled_templates"  # the folder beside this module that setup.py writes into the wheel


def builtin_templates() -> str:
    """The folder of the shipped templates (the wheel's pipegen/templates, or the repo's templates/).

    Found beside this file rather than through importlib.resources, whose imports (zipfile
    among them) every render would pay; Jinja's FileSystemLoader needs a real folder anyway.
    """
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    installed = os.path.join(package, "templates")
    if os.path.isfile(os.path.join(installed, "pipeline.j2")):
        return installed
    return os.path.join(os.path.dirname(package), "templates")


@functools.cache
def environment(templates: str | None = None) -> Environment:
    """The Jinja environment: a user's folder first, then the shipped templates (also as builtin/NAME).
    One per process and folder: a template is compiled once, and read again only when its file changes."""
    from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PrefixLoader, StrictUndefined

    builtin = _builtin_loader()
    loaders: list[BaseLoader] = []
    if templates:
        if not os.path.isdir(templates):
            raise UsageError(f"--templates {templates}: not a folder", fix="pass a folder of *.j2 templates")
        loaders.append(FileSystemLoader(templates))
    loaders += [builtin, PrefixLoader({"builtin": builtin})]
    env = Environment(
        loader=ChoiceLoader(loaders),
        undefined=StrictUndefined,
        autoescape=False,
        finalize=scalar,  # every {{ expression }} goes out as a safe YAML scalar unless marked Safe
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=True,  # a stat per template: a --templates file edited between two renders is read again
    )
    env.filters["q"] = scalar
    env.filters["flow"] = flow
    env.filters["block"] = block
    env.filters["raw"] = Safe  # deliberate opt-out: the template author vouches for the text
    return env


@functools.cache
def _builtin_loader() -> BaseLoader:
    """The shipped templates: compiled to Python when the wheel was built (setup.py: write_compiled,
    byte-compiled on install like any module), else read and compiled now (a checkout, or a wheel whose
    templates or Jinja changed since). Nothing compiled is read from a cache; the stamp (every template read
    and hashed) is made once per process, not once per --templates folder."""
    from jinja2 import FileSystemLoader, ModuleLoader

    compiled = os.path.join(os.path.dirname(os.path.abspath(__file__)), COMPILED)
    try:
        with open(os.path.join(compiled, "STAMP"), encoding="utf-8") as handle:
            if handle.read() == _stamp():
                return ModuleLoader(compiled)
    except OSError:
        pass
    return FileSystemLoader(builtin_templates())


def _stamp() -> str:
    """What the compiled templates are made from: the shipped templates' text and Jinja's version."""
    import hashlib

    import jinja2

    digest = hashlib.sha256(jinja2.__version__.encode())
    folder = builtin_templates()
    for name in sorted(os.listdir(folder)):
        if name.endswith(".j2"):
            with open(os.path.join(folder, name), "rb") as handle:
                digest.update(b"\0" + name.encode() + b"\0" + handle.read())
    return digest.hexdigest()


def write_compiled(target: str) -> None:
    """Compile the shipped templates into `target` as Python modules (setup.py, when the wheel is built)."""
    from jinja2 import FileSystemLoader

    env = environment().overlay(loader=FileSystemLoader(builtin_templates()))
    env.compile_templates(target, extensions=["j2"], zip=None, ignore_errors=False)
    from pipegen.atomic import write_text

    write_text(os.path.join(target, "STAMP"), _stamp())  # last, and whole: it vouches for the modules


def to_yaml(page: Page, templates: str | None = None) -> str:
    """The page as YAML text (not yet validated); the templates see it as `plan`, the name they have always read."""
    from jinja2 import TemplateError

    env = environment(templates)
    try:
        text: str = env.get_template("pipeline.j2").render(entries=page.entries, plan=page)
        return text
    except TemplateError as exc:
        where = _template_frame(exc)
        raise UsageError(f"template error in {where}: {exc}",
                         fix="fix the template (see templates/ for the shipped ones)") from None


def _template_frame(exc: Exception) -> str:
    """'block.j2:3' for the innermost template line of a Jinja error (Jinja maps frames to templates)."""
    import traceback

    name = getattr(exc, "filename", None) or getattr(exc, "name", None)
    line = getattr(exc, "lineno", None)
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        filename = frame.f_code.co_filename
        if filename.endswith(".j2"):
            name, line = filename, lineno
    if not name:
        return "a template"
    shown = os.path.basename(name) if os.path.dirname(name) == builtin_templates() else name
    return f"{shown}:{line}" if line else shown
