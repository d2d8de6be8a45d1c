"""First-parent history as commits and their changed files, from one `git log -z` output. Pure.

The edge (commands/audit.py) runs `git log --first-parent --diff-merges=first-parent
--no-renames --name-status -z --format=%x01%H%x00%s`: one call for the whole range. A
merge's files are its diff against its first parent (what the merged branch changed);
a rename is a deletion and an addition, so both paths count, as they do for `select`.
"""

from __future__ import annotations

from pipegen.frozen import frozen

LOG_FORMAT = "--format=%x01%H%x00%s"  # \x01 opens a commit where a status letter could stand


@frozen
class Commit:
    sha: str
    subject: str
    files: tuple[str, ...]  # changed against the first parent, each once

    @property
    def short(self) -> str:
        return self.sha[:12]


def parse_log(output: str) -> list[Commit]:
    """Commits in git's order (newest first). After a header come (status, path) pairs;
    a copy would bring two paths (not asked for: --no-renames)."""
    tokens = output.split("\0")
    commits: list[Commit] = []
    sha, subject = "", ""
    files: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i].lstrip("\n")
        if token.startswith("\x01"):
            if sha:
                commits.append(Commit(sha, subject, tuple(dict.fromkeys(files))))
            sha, subject, files = token[1:], tokens[i + 1] if i + 1 < len(tokens) else "", []
            i += 2
        elif token:
            paths = 2 if token[0] in "RC" else 1
            files += tokens[i + 1:i + 1 + paths]
            i += 1 + paths
        else:
            i += 1
    if sha:
        commits.append(Commit(sha, subject, tuple(dict.fromkeys(files))))
    return commits
