"""The page (page.py) -> YAML text through the Jinja templates (templates/*.j2, or a user's --templates DIR
that overrides any of them).

No user string reaches the YAML raw: every `{{ expression }}` goes out through
`scalar()` unless it is explicitly marked safe (yaml_writer.py says how).
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from pipegen.cache import cache_dir
from pipegen.errors import UsageError
from pipegen.render.page import Page
from pipegen.render.yaml_writer import Safe, block, flow, scalar

if TYPE_CHECKING:  # jinja2 is imported when a pipeline is rendered, not with this module
    from jinja2 import BaseLoader, Environment
    from jinja2.bccache import Bucket


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


def environment(templates: str | None = None) -> Environment:
    """The Jinja environment: a user's folder first, then the shipped templates (also as builtin/NAME)."""
    from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PrefixLoader, StrictUndefined

    builtin = FileSystemLoader(builtin_templates())
    loaders: list[BaseLoader] = []
    if templates:
        if not os.path.isdir(templates):
            raise UsageError(f"--templates {templates}: not a folder", fix="pass a folder of *.j2 templates")
        loaders.append(FileSystemLoader(templates))
    loaders += [builtin, PrefixLoader({"builtin": builtin})]
    bytecode_cache = None
    folder = cache_dir()
    if folder:
        from jinja2 import FileSystemBytecodeCache

        class QuietCache(FileSystemBytecodeCache):
            """A cache that is only an optimisation: an unreadable or unwritable one is no error."""

            def load_bytecode(self, bucket: Bucket) -> None:
                try:
                    super().load_bytecode(bucket)
                except (OSError, ValueError, EOFError):
                    bucket.reset()

            def dump_bytecode(self, bucket: Bucket) -> None:
                with contextlib.suppress(OSError):
                    super().dump_bytecode(bucket)

        try:
            os.makedirs(os.path.join(folder, "jinja"), exist_ok=True)
            bytecode_cache = QuietCache(os.path.join(folder, "jinja"))
        except OSError:
            bytecode_cache = None
    env = Environment(
        loader=ChoiceLoader(loaders),
        undefined=StrictUndefined,
        autoescape=False,
        finalize=scalar,  # every {{ expression }} goes out as a safe YAML scalar unless marked Safe
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        bytecode_cache=bytecode_cache,
        auto_reload=False,
    )
    env.filters["q"] = scalar
    env.filters["flow"] = flow
    env.filters["block"] = block
    env.filters["raw"] = Safe  # deliberate opt-out: the template author vouches for the text
    return env


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
