"""Shell text made ready to read: heredoc bodies left out, a script's own folder written as a path. Pure."""

from __future__ import annotations

import posixpath
import re

HEREDOC = re.compile(r"(?<!<)<<-?[ \t]*(['\"]?)(\w+)\1")
SCRIPT_DIR = re.compile(  # $(dirname "$0"), $(dirname -- "${BASH_SOURCE[0]}"): the script's own folder
    r"""\$\(\s*dirname\s+(?:--\s+)?"?(?:\$0|\$\{0\}|\$\{BASH_SOURCE(?:\[0\])?\}|\$BASH_SOURCE)"?\s*\)""")
GIT_TOP = re.compile(r"\$\(\s*git\s+rev-parse\s+--show-toplevel\s*\)")
ROOTED = re.compile(r'^[ \t]*(?:export[ \t]+|local[ \t]+|readonly[ \t]+)?(\w+)="?(//[^"\s$`]*)"?[ \t]*$', re.M)
CD_PWD = re.compile(r"""\$\(\s*cd\s+(?:--\s+)?"?([^"$()]*)"?\s*&&\s*pwd(?:\s+-P)?\s*\)""")
ROOT = "//"  # a repository path made absolute by a script's own folder (`$(dirname "$0")`)


def prepared(text: str, script: str) -> str:
    """Heredoc bodies left out (they are another program's input), a script's own folder made a path."""
    if script:
        folder = ROOT + posixpath.dirname(script)
        text = CD_PWD.sub(lambda m: m.group(1), SCRIPT_DIR.sub(folder, GIT_TOP.sub(ROOT, text)))
        for name, value in ROOTED.findall(text):  # SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)" and those using it
            text = CD_PWD.sub(lambda m: m.group(1), re.sub(rf"\$\{{{name}\}}|\${name}\b", value, text))
    if "<<" not in text:
        return text
    out: list[str] = []
    end: str | None = None
    for line in text.split("\n"):
        if end is not None:
            end = None if line.strip() == end else end
            continue
        match = HEREDOC.search(line)
        end = match.group(2) if match else None
        out.append(line)
    return "\n".join(out)
