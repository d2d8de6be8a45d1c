"""The test paths a step's commands name, as repository-relative paths. Pure.

Understood: `pytest ARGS` (also `python -m pytest`, `py.test`), `python X.py`,
`torchrun [options] X.py` (also `python -m torch.distributed.run`), after
`VAR=value` prefixes and wrappers such as `timeout 30m` or `uv run`; `::node`
ids are cut, option values (`-k expr`, `--ignore path`) are not paths. Paths
are relative to the step's working dir, which a `cd` in an earlier command
changes (vLLM joins a step's commands into one shell). Docker paths map to
the repository through `docker_workdir` prefixes (vLLM: `/vllm-workspace`
-> the repository root). Anything computed by the shell (`$VAR`, globs,
`{}` from xargs) is left alone: it cannot be checked statically.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable, Sequence

from pipegen.buildkite.workdir import joined, map_workdir
from pipegen.frozen import frozen

# pytest options that take a value in the next argument (when written without "=").
PYTEST_VALUE_OPTIONS = frozenset(
    "-k -m -p -c -o -n -W -r --ignore --ignore-glob --deselect --rootdir --confcutdir --basetemp --junitxml "
    "--junit-xml --timeout --maxfail --durations --tb --log-level --log-cli-level --log-file --cov --cov-report "
    "--numprocesses --dist --reruns --reruns-delay --import-mode --capture --shard-id --num-shards "
    "--config-list-file --tp-size --override-ini --count --randomly-seed --last-failed-no-failures".split()
)
PATH_OPTIONS = frozenset({"--ignore", "--ignore-glob", "--deselect"})
TORCHRUN_VALUE_OPTIONS = frozenset(
    "--nnodes --nproc-per-node --nproc_per_node --node-rank --node_rank --master-addr --master_addr --master-port "
    "--master_port --rdzv-backend --rdzv_backend --rdzv-endpoint --rdzv_endpoint --rdzv-id --rdzv_id --rdzv-conf "
    "--rdzv_conf --max-restarts --max_restarts --monitor-interval --monitor_interval --start-method --start_method "
    "--role --log-dir --log_dir -r --redirects -t --tee --local-addr --local_addr --local-ranks-filter".split()
)
PYTHON_VALUE_OPTIONS = frozenset({"-W", "-X", "-Q"})
WRAPPERS = {"env": 0, "time": 0, "nohup": 0, "exec": 0, "timeout": 1, "uv": 1, "coverage": 1}  # words to skip
SEPARATORS = frozenset({"&&", "||", "|", ";", "&", "\n", "(", ")", ";;", "|&"})
DYNAMIC = re.compile(r"[$*?\[\]{}`~]")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PYTHON = re.compile(r"^python(3(\.\d+)?)?$")


@frozen
class CommandPath:
    """A path a command names: `path` is repo-relative, `written` as in the command."""

    path: str
    written: str
    tool: str  # "pytest", "python", "torchrun"
    command: int  # index in the step's commands
    ignored: tuple[str, ...] = ()  # repo-relative --ignore paths of the same pytest run

    @property
    def surely_path(self) -> bool:
        """False for a bare word (`engine`): a folder if it exists, else maybe an option's value."""
        return "/" in self.written or self.written.endswith(".py")


def tokens(command: str) -> list[str] | None:
    """Shell words and operators (newline included); None when the quoting is unbalanced."""
    lexer = shlex.shlex(command.replace("\\\n", " "), posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:
        return None


def segments(words: list[str]) -> Iterable[list[str]]:
    """Simple commands: words between shell operators."""
    current: list[str] = []
    for word in words:
        if word in SEPARATORS or (word and set(word) <= set("<>&|;")):
            if current:
                yield current
            current = []
        else:
            current.append(word)
    if current:
        yield current


def extract(commands: Sequence[str], working_dir: str | None,
            mapping: Sequence[tuple[str, str]]) -> tuple[list[CommandPath], list[str]]:
    """Test paths named by `commands`, and relative ones the working dir cannot place.

    A working dir outside every docker_workdir prefix (vLLM's "/") leaves
    relative paths unplaceable; absolute ones are still mapped.
    """
    cwd = map_workdir(working_dir, mapping)
    refs: list[CommandPath] = []
    unplaced: list[str] = []
    for index, command in enumerate(commands):
        for words in segments(tokens(command) or []):
            words = _strip_prefix(words)
            if not words:
                continue
            if words[0] == "cd":
                cwd = _cd(cwd, words[1:], mapping)
                continue
            for written, tool, ignored in _named(words):
                if cwd is None and not written.startswith("/"):
                    unplaced.append(written)
                    continue
                path = _resolve(cwd or "", written, mapping)
                if path is not None:
                    kept = tuple(p for p in (_resolve(cwd or "", i, mapping) for i in ignored) if p is not None)
                    refs.append(CommandPath(path, written, tool, index, kept))
    return refs, unplaced


def _strip_prefix(words: list[str]) -> list[str]:
    """Drop `VAR=value` assignments and wrapper words (`timeout 30m`, `uv run`)."""
    index = 0
    while index < len(words):
        word = words[index]
        if ASSIGNMENT.match(word):
            index += 1
        elif word in WRAPPERS:
            index += 1 + WRAPPERS[word]
            while index < len(words) and words[index].startswith("-"):
                index += 1
        else:
            break
    return words[index:]


def _cd(cwd: str | None, args: list[str], mapping: Sequence[tuple[str, str]]) -> str | None:
    """The new working dir; None when it is unknown (computed, or outside the repository)."""
    target = next((a for a in args if not a.startswith("-")), None)
    if target is None or DYNAMIC.search(target) or (cwd is None and not target.startswith("/")):
        return None
    return map_workdir(target, mapping) if target.startswith("/") else joined(cwd or "", target)


def _resolve(cwd: str, written: str, mapping: Sequence[tuple[str, str]]) -> str | None:
    if written.startswith("/"):
        return map_workdir(written, mapping) or None
    return joined(cwd, written) or None


def _named(words: list[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(path as written, tool, --ignore paths) for one simple command."""
    head, rest = words[0], words[1:]
    if head in ("pytest", "py.test"):
        return _pytest_paths(rest)
    if head == "torchrun":
        return _script(rest, TORCHRUN_VALUE_OPTIONS, "torchrun")
    if PYTHON.match(posixpath.basename(head)):
        return _python(rest)
    return []


def _python(args: list[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    index = 0
    while index < len(args) and args[index].startswith("-"):
        option = args[index]
        if option == "-c":
            return []
        if option == "-m":
            module = args[index + 1] if index + 1 < len(args) else ""
            if module == "pytest":
                return _pytest_paths(args[index + 2:])
            if module in ("torch.distributed.run", "torch.distributed.launch"):
                return _script(args[index + 2:], TORCHRUN_VALUE_OPTIONS, "torchrun")
            return []
        index += 2 if option in PYTHON_VALUE_OPTIONS else 1
    return _script(args[index:], frozenset(), "python")


def _script(args: list[str], value_options: frozenset[str], tool: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """The first positional argument that names a Python file."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in value_options
        elif arg.endswith(".py") or tool == "python":
            return [] if DYNAMIC.search(arg) else [(arg, tool, ())]
        else:
            return []  # torchrun's first positional is the program; this one is not a file
    return []


def _pytest_paths(args: list[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """Positional pytest arguments that look like paths, with `::node` cut."""
    positionals, ignored = [], []
    skip_for: str | None = None
    for arg in args:
        if skip_for is not None:
            if skip_for in PATH_OPTIONS:
                ignored.append(arg)
            skip_for = None
        elif arg.startswith("-"):
            name, eq, value = arg.partition("=")
            if eq and name in PATH_OPTIONS:
                ignored.append(value)
            elif not eq and arg in PYTEST_VALUE_OPTIONS:
                skip_for = arg
        else:
            positionals.append(arg.split("::", 1)[0])
    # `--deselect path::test` drops one test, not the file.
    kept = tuple(i for i in ignored if not DYNAMIC.search(i) and "::" not in i)
    return [(p, "pytest", kept) for p in positionals if p and not DYNAMIC.search(p) and _pathlike(p)]


def _pathlike(arg: str) -> bool:
    """A bare word (`engine`) may be a folder; a number or an option value is not."""
    return not arg.replace(".", "").isdigit() and "=" not in arg
