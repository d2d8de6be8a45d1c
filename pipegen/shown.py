"""File names and values as pipegen prints them: never raw control or bidi characters, never megabytes.

A file name may hold a newline (a forged line in select's output) or a
right-to-left override (text that reads differently than it is); a list
given with --files-from may hold a 300 MB line. Printed text escapes the
first and cuts the second; JSON keeps every path as it is.
"""

from __future__ import annotations

import re

MAX_SHOWN = 200  # characters of one path in a message

# C0/C1 controls, DEL, and Unicode's bidirectional marks, embeddings, overrides and isolates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def cut(text: str, limit: int = MAX_SHOWN) -> str:
    """`text`, or its start and its length where it is longer than `limit` characters."""
    return f"{text[:limit // 2]}...({len(text):,} characters)" if len(text) > limit else text


def shown(text: str, limit: int = MAX_SHOWN) -> str:
    """`text` cut to about `limit` characters, its unsafe characters escaped (`\\n`, `\\u202e`)."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), cut(text, limit))
