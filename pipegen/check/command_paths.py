"""The test paths one simple command names (`pytest ARGS`, `python X.py`, `torchrun ... X.py`). Pure.

Understood: `pytest ARGS` (also `python -m pytest`, `py.test`), `python X.py`,
`torchrun [options] X.py` (also `python -m torch.distributed.run`), after
`VAR=value` prefixes and wrappers such as `timeout 30m` or `uv run`; `::node`
ids are cut, option values (`-k expr`, `--ignore path`) are not paths. The
shell around the command (cd, variables, scripts, globs, `find | xargs`) is
command_walk.py's.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from functools import lru_cache

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
FIND_TESTS = frozenset({"-maxdepth", "-mindepth", "-name", "-iname", "-path", "-wholename"})
WRAPPERS = {"env": 0, "time": 0, "nohup": 0, "exec": 0, "timeout": 1, "uv": 1, "coverage": 1}  # words to skip
WRAPPERS.update(dict.fromkeys(("if", "elif", "then", "else", "do", "while", "until", "!", "{"), 0))  # shell keywords
OPERATOR_CHARS = frozenset("<>&|;()\n")
DYNAMIC = re.compile(r"[$*?\[\]{}`~]")  # computed by the shell: a glob, a variable, ...
ARRAY = re.compile(r"^\$\{\w+\[[@*]\]\}$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PYTHON = re.compile(r"^python(3(\.\d+)?)?$")


@frozen
class CommandPath:
    """A path a command names: `path` is repo-relative, `written` as in the command."""

    path: str
    written: str
    tool: str  # "pytest", "python", "torchrun"; "script" for a shell script the step runs
    command: int  # index in the step's commands
    ignored: tuple[str, ...] = ()  # repo-relative --ignore paths of the same pytest run

    @property
    def surely_path(self) -> bool:
        """False for a bare word (`engine`): a folder if it exists, else maybe an option's value."""
        return "/" in self.written or self.written.endswith(".py") or self.tool == "script"


# shlex's posix reading (whitespace_split, punctuation_chars "();<>|&\n", "#" comments), as one regex: the same
# tokens (tests/check/test_command_paths.py holds it to shlex), several times faster on the scripts steps run.
_LEXEME = r"""[ \t\r]+|\#[^\n]*\n?|([();<>|&\n]+)
    |((?:[^ \t\r();<>|&\n'"\\\#]+|'[^']*'|"(?:[^"\\]|\\[\s\S])*"|\\[\s\S])+)"""
_TOKEN = re.compile(_LEXEME, re.X)  # (operator, word); both empty for a blank or a comment
_LEXED = re.compile(f"(?>{_LEXEME})*", re.X)  # read as tokens to the end: no unclosed quote, no lone backslash
_QUOTING = re.compile(r"['\"\\]")
_PIECE = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\[\s\S])*)"|\\([\s\S])|([^'"\\]+)""")
_QUOTED_ESCAPE = re.compile(r"\\([\\\"])")


@lru_cache(maxsize=4096)
def tokens(command: str) -> tuple[str, ...] | None:
    """Shell words and operators (newline included); None when the quoting is unbalanced."""
    # A comment swallows its line's newline in shlex: doubled, one is left to end the command.
    text = command.replace("\\\n", " ").replace("\n", "\n\n")
    if not _LEXED.fullmatch(text):
        return None  # what no token reads: an unclosed quote, or a backslash at the end
    quoting = _QUOTING.search
    return tuple([operator or (_unquoted(word) if quoting(word) else word)
                  for operator, word in _TOKEN.findall(text) if operator or word])


def _unquoted(word: str) -> str:
    """A word's value: quotes removed; in double quotes only \\ and \" are escapes, outside any character is."""
    parts = []
    for single, double, escaped, plain in _PIECE.findall(word):
        parts.append(single or (_QUOTED_ESCAPE.sub(r"\1", double) if double else escaped or plain))
    return "".join(parts)


@lru_cache(maxsize=4096)
def simple_commands(command: str) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """The simple commands of shell text: the words between shell operators, each with the operator before
    it ("" first); None when the quoting is unbalanced. Kept per text: a script several steps run is read once."""
    words = tokens(command)
    if words is None:
        return None
    out: list[tuple[str, tuple[str, ...]]] = []
    current: list[str] = []
    before = ""
    for word in words:
        if word[:1] in OPERATOR_CHARS and set(word) <= OPERATOR_CHARS:  # &&, ||, ;, |, a newline, ...
            if current:
                out.append((before, tuple(current)))
            current = []
            before = word
        else:
            current.append(word)
    if current:
        out.append((before, tuple(current)))
    return tuple(out)


def strip_prefix(words: list[str]) -> list[str]:
    """Drop `VAR=value` assignments and wrapper words (`timeout 30m`, `uv run`)."""
    index = 0
    while index < len(words):
        word = words[index]
        # `env "${settings[@]}" cmd`: assignments, likely (each regex tried only where its first sign is)
        if ("=" in word and ASSIGNMENT.match(word)) or (word[:2] == "${" and ARRAY.match(word)):
            index += 1
        elif word in WRAPPERS:
            index += 1 + WRAPPERS[word]
            while index < len(words) and words[index].startswith("-"):
                index += 1
        else:
            break
    return words[index:]


def tool_of(words: list[str]) -> str | None:
    """The test tool a simple command runs ("pytest", "python", "torchrun"), None for another."""
    head = words[0]
    if head in ("pytest", "py.test"):
        return "pytest"
    if head == "torchrun":
        return "torchrun"
    if PYTHON.match(head.rpartition("/")[2]):
        module = words[words.index("-m") + 1] if "-m" in words[:-1] else None
        return {"pytest": "pytest", None: "python"}.get(module, "torchrun" if module and "torch" in module else None)
    return None


def named(words: list[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    """(path as written, tool, --ignore paths) for one simple command; a written path may hold shell
    syntax (a glob, a `$VAR`), for the caller to expand or report."""
    head, rest = words[0], words[1:]
    if head in ("pytest", "py.test"):
        return _pytest_paths(rest)
    if head == "torchrun":
        return _script(rest, TORCHRUN_VALUE_OPTIONS, "torchrun")
    if PYTHON.match(head.rpartition("/")[2]):
        return _python(rest)
    return []


def _python(args: list[str]) -> list[tuple[str, str, tuple[str, ...]]]:
    index = 0
    while index < len(args) and args[index].startswith("-"):
        option = args[index]
        if option in ("-c", "-"):  # code in the argument, or on stdin
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
            return [(arg, tool, ())]
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
    return [(p, "pytest", kept) for p in positionals if p and _pathlike(p)]


def _pathlike(arg: str) -> bool:
    """A bare word (`engine`) may be a folder; a number or an option value is not."""
    return not arg.replace(".", "").isdigit() and "=" not in arg


def find_starts(args: list[str]) -> list[str]:
    out = []
    for arg in args:
        if arg.startswith("-") or arg in ("!", "("):
            break
        out.append(arg)
    return out


def find_tests(args: list[str]) -> list[tuple[str, str, bool]]:
    """find's tests as (test, value, negated); actions and tests not read here are left out (they pass)."""
    tests: list[tuple[str, str, bool]] = []
    negate = False
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("-not", "!"):
            negate = True
            index += 1
            continue
        if arg in FIND_TESTS and index + 1 < len(args):
            tests.append((arg, args[index + 1], negate))
            index += 1
        index += 1
        negate = False
    return tests


def find_passes(tests: list[tuple[str, str, bool]], rest: str, shown: str) -> bool:
    """Whether a file (`rest` below the start dir, `shown` as find prints it) passes every test."""
    for test, value, negated in tests:
        if test == "-maxdepth":
            passed = rest.count("/") + 1 <= int(value) if value.isdigit() else True
        elif test == "-mindepth":
            passed = rest.count("/") + 1 >= int(value) if value.isdigit() else True
        elif test in ("-name", "-iname"):
            passed = fnmatch.fnmatchcase(posixpath.basename(rest), value)
        else:  # -path, -wholename
            passed = fnmatch.fnmatchcase(shown, value)
        if passed == negated:
            return False
    return True
