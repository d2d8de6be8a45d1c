"""Text inside Markdown that pipegen writes (select, render's annotation, check and audit reports)."""

from __future__ import annotations


def cell(text: str) -> str:
    """`text` on one line of a Markdown table or list: a '|' would end the cell, a newline the row."""
    return text.replace("|", "\\|").replace("\n", " ")
