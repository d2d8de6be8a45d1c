"""Load a repository's CI declarations: find the config, and let the first dialect that claims it read it.

The config is `--config PATH`, else `$PIPEGEN_CONFIG`, else the first of the default files
(declarations/discover.py) that exists.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pipegen.declarations.discover import find_config, rel
from pipegen.declarations.fields import require_mapping
from pipegen.declarations.yamlio import load_file
from pipegen.dialects.interface import Dialect, Source
from pipegen.dialects.own import config as own
from pipegen.dialects.vllm import config as vllm
from pipegen.dialects.vllm import legacy
from pipegen.model import Declarations, Location

DIALECTS: tuple[Dialect, ...] = (vllm, legacy, own)  # in the order they are asked; pipegen's own claims any config


def dialect(name: str) -> Dialect:
    """The dialect that reads the layout `name` (Declarations.layout)."""
    return next(d for d in DIALECTS if name == d.NAME)


def load(root: str = ".", config: str | None = None, environ: Mapping[str, str] | None = None) -> Declarations:
    """Read the declarations of the repository at `root` (`environ`: $PIPEGEN_CONFIG, the legacy mirror tag)."""
    return load_documents(root, config, environ)[0]


def load_documents(root: str = ".", config: str | None = None,
                   environ: Mapping[str, str] | None = None) -> tuple[Declarations, dict[str, Any]]:
    """The declarations, and the parsed YAML of each of their files (`check` reads entry lines from it)."""
    environ = {} if environ is None else environ
    path = rel(root, find_config(root, config, environ))
    docs: dict[str, Any] = {}
    data = docs[path] = load_file(os.path.join(root, path), path)
    top = require_mapping(data, Location(path, 1, 1), "the config file")
    dialect = next(d for d in DIALECTS if d.claims(top))
    return dialect.load(Source(root, path, top, docs, environ)), docs
