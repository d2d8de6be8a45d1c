"""The tests a step runs: its commands read as the shell runs them, far enough to find them. Pure.

command_paths.py reads one simple command (`pytest ARGS`); this walks the
shell around it. Paths are relative to the step's working dir, which `cd`
changes (vLLM joins a step's commands into one shell); docker paths map
through `docker_workdir`. `VAR=value` and a script's positional arguments
(`$1`, `${2:-x}`) are expanded; a script the step runs (`bash x.sh ARGS`,
`./x.sh`, `source x.sh`) is read with its own arguments; an argument that
is itself shell text (`run-cpu-test.sh 30m "pytest tests/x.py"`, `bash -c
"..."`, `docker run IMAGE bash -c "..."`) is read as commands, its relative
paths from the working dir or else the repository root (where the program
it is handed to runs it is not known); globs are expanded over the tracked
files, and `find DIRS ... | xargs pytest` runs the files find would list.
What cannot be read (a `$VAR` no assignment sets, a `$(...)` or backquoted
command's output, a script that is not tracked) comes back as text, for a
finding that names it whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from pipegen.buildkite.workdir import joined, map_workdir
from pipegen.check.command_paths import (
    ASSIGNMENT,
    DYNAMIC,
    CommandPath,
    find_passes,
    find_starts,
    find_tests,
    named,
    simple_commands,
    strip_prefix,
    tokens,
    tool_of,
)
from pipegen.check.file_index import FileIndex
from pipegen.check.shell_text import ROOT, prepared

Reader = Callable[[str], "str | None"]  # repo path -> text, None when it cannot be read
VARIABLE = re.compile(r"\$(?:\{(\w+)(?::?[-=]([^}]*))?\}|(\w+))")
GLOB = re.compile(r"[*?\[]")
SHELLS = frozenset({"bash", "sh", "source", "."})
DECLARE = frozenset({"export", "local", "readonly", "declare"})
QUIET = DECLARE | {"echo", "printf", "grep", "awk", "sed", "read", "trap"}  # no command in their arguments
# $(...) (two levels deep), `...`; not an escaped one (`echo "\`x\`"` prints backquotes)
SUBSTITUTION = re.compile(r"(?<!\\)(?:\$\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)|`[^`]*(?<!\\)`)")
PLACED = re.compile(r"\$\{PIPEGEN_SUBSTITUTION_(\d+)\}")  # where a substitution stood while the text is read
MAX_DEPTH = 8


@dataclass(repr=False, eq=False)  # nothing compares or shows one: __init__ is the only method compiled at import
class Frame:
    """Where shell text runs: working dir (None: unknown), variables, positional arguments."""

    cwd: str | None
    command: int  # the step command it comes from
    variables: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    script: str = ""  # the script being read, "" for the step's own commands
    handed: bool = False  # text handed to another program: relative paths may be from the root
    depth: int = 0


@dataclass(repr=False, eq=False)
class Found:
    refs: list[CommandPath] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)  # relative paths the working dir cannot place
    unread: list[str] = field(default_factory=list)  # text that runs tests or scripts check cannot follow


def extract(commands: Sequence[str], working_dir: str | None, mapping: Sequence[tuple[str, str]],
            index: FileIndex | None = None, read: Reader | None = None) -> Found:
    """The test paths `commands` run; `index` and `read` (the tracked files) expand globs and follow scripts."""
    walk = _Walk(index or FileIndex(()), read or (lambda _path: None), mapping)
    frame = Frame(map_workdir(working_dir, mapping), 0)
    for number, command in enumerate(commands):
        frame.command = number
        walk.text(command, frame)
    return walk.found


class _Walk:
    def __init__(self, index: FileIndex, read: Reader, mapping: Sequence[tuple[str, str]]):
        self.index, self.read, self.mapping = index, read, mapping
        self.found = Found()
        self.followed: set[tuple[str, tuple[str, ...], str | None]] = set()
        self.substituted: list[str] = []  # command substitutions, by number, for what is shown
        self.named_before: list[list[str]] = []  # the words of every simple command read, in order

    def text(self, text: str, frame: Frame) -> None:
        read = prepared(text, frame.script)
        if "$(" in read or "`" in read:
            read = SUBSTITUTION.sub(lambda match: self.substitution(match.group(0), frame), read)
        commands = simple_commands(read)
        if commands is None:
            if frame.script:  # a script's odd line loses that line, not the script (the line alone: not again)
                for line in text.splitlines():
                    self.text(line, frame) if line != text and tokens(line) is not None else None
            elif not frame.handed:
                self.unread(text)
            return
        found: list[str] | None = None  # what a `find` lists, for an `| xargs` after it
        for before, raw in commands:
            words_ = [self.expand(word, frame) if "$" in word else word for word in raw]
            self.named_before.append(words_)
            if all(map(ASSIGNMENT.match, words_)):
                frame.variables.update(_assigned(words_))
                continue
            if found is not None and before == "|" and words_[0] == "xargs":
                self.xargs(words_[1:], found, frame)
            found = self.find(words_[1:], frame) if words_[0] == "find" else None
            if ">" in before or "<" in before:  # `> out.sh ...`: a file written or read, then maybe a command
                words_ = words_[1:]
            if words_:
                self.simple(words_, frame)

    def substitution(self, written: str, frame: Frame) -> str:
        """A `$(...)` or backquoted command: its commands are read (in a subshell: a `cd` there stays there),
        and one word stands for its output, which is not known (the lexer would split `$(` from its text)."""
        inner = written[2:-1] if written.startswith("$(") else written[1:-1]
        if inner.strip():  # shorter each time: SUBSTITUTION reads two levels deep
            self.text(inner, replace(frame, variables=dict(frame.variables)))
        self.substituted.append(written)
        return f"${{PIPEGEN_SUBSTITUTION_{len(self.substituted) - 1}}}"

    def unread(self, text: str, why: str = "") -> None:
        """Text check cannot read, as written (command substitutions put back) and shortened, for the finding."""
        if "PIPEGEN_SUBSTITUTION_" in text:
            text = PLACED.sub(self._written, text)
        self.found.unread.append(_shown(text) + why)

    def _written(self, match: re.Match[str]) -> str:
        """The substitution a placeholder stands for; a look-alike the command itself wrote, as written."""
        number = int(match.group(1))
        return self.substituted[number] if number < len(self.substituted) else match.group(0)

    def expand(self, word: str, frame: Frame) -> str:
        """`$NAME`, `${NAME:-default}`, `$1` from what is known; anything else is kept as written."""
        if "$" not in word:
            return word

        def value(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(3)
            known = frame.args[int(name) - 1] if name.isdigit() and 0 < int(name) <= len(frame.args) else \
                frame.variables.get(name)
            if known is not None:
                return known
            default = match.group(2)
            return self.expand(default, frame) if default is not None and match.group(1) else match.group(0)

        return VARIABLE.sub(value, word)

    def simple(self, words: list[str], frame: Frame, wrapped: int = 0) -> None:
        rest = strip_prefix(words)
        if not rest or rest[0] in QUIET:
            frame.variables.update(_assigned(rest[1:]) if rest and rest[0] in DECLARE else {})
            return
        head = rest[0]
        if head == "cd":
            frame.cwd, frame.handed = self.cd(frame, rest[1:])
            return
        if head in SHELLS:
            self.shell(rest[1:], replace(frame, variables=_with(frame, words)))
        elif "/" in head and not head.endswith(".py") and not DYNAMIC.search(head):
            self.script(head, rest[1:], replace(frame, variables=_with(frame, words)), run=True)
        # A wrapper program (`sde64 -skl -- python3 x.py`), MAX_DEPTH deep: thousands of `--` overflowed the stack
        if "--" in rest and tool_of(rest) is None and wrapped < MAX_DEPTH:
            self.simple(rest[rest.index("--") + 1:], frame, wrapped + 1)
        for written, tool, ignored in named(rest):
            self.named(written, tool, ignored, frame)
        for word in rest[1:]:  # shell text handed on: `bash -c "..."`, `run-test.sh "pytest x"`, `docker run`
            if (" " in word or "\n" in word or ";" in word) and frame.depth < MAX_DEPTH:
                self.text(word, replace(frame, variables=dict(frame.variables), handed=True, depth=frame.depth + 1,
                                        script=""))

    def shell(self, args: list[str], frame: Frame) -> None:
        """`bash [-opts] script ARGS` (or `source`): follow the script; `bash -c TEXT` is read by simple(), and
        `sh -s ARGS` reads its script from stdin."""
        index = 0
        while index < len(args) and args[index].startswith("-"):
            if ("c" in args[index] or "s" in args[index]) and not args[index].startswith("--"):
                return
            index += 1
        if index < len(args):
            self.script(args[index], args[index + 1:], frame)

    def script(self, written: str, args: list[str], frame: Frame, run: bool = False) -> None:
        """Follow a script a shell reads (`bash x.sh`), or that is run (`./x.sh`, `run`), with its arguments."""
        if DYNAMIC.search(written):
            self.unread(" ".join([written, *args]))
            return
        path = self.place(written, frame)
        if path is None or path not in self.index.bit:
            if path is not None and self.missing(path, frame, run):
                self.found.refs.append(CommandPath(path, written, "script", frame.command))
            return
        key = (path, tuple(args), frame.cwd)
        if key in self.followed or frame.depth >= MAX_DEPTH:
            return
        self.followed.add(key)
        if path.endswith(".py"):
            return
        text = self.read(path)
        if text is not None:
            self.text(text, replace(frame, variables=dict(frame.variables), args=tuple(args), script=path,
                                    depth=frame.depth + 1))

    def missing(self, path: str, frame: Frame, run: bool) -> bool:
        """Whether a script the step runs should be in the repository and is not. Not one that runs elsewhere
        (handed on to an image, in a folder that is not tracked: a program of the image or agent, `./sde/sde64`,
        a clone), nor one a command before names, which makes it (`curl -o x.sh URL`, `> x.sh`, `chmod +x x.sh`);
        run as a program, only a shell script or a file without a suffix (not an array's `requirements/x.txt`)."""
        folder, _, name = path.rpartition("/")
        if frame.handed or (folder and not self.index.is_dir(folder)) or self.index.is_dir(path) or " " in name:
            return False
        if run and "." in name and not name.endswith((".sh", ".bash")):
            return False
        return not any(word.rpartition("/")[2].rpartition("=")[2] == name
                       for words in self.named_before[:-1] for word in words)

    def named(self, written: str, tool: str, ignored: tuple[str, ...], frame: Frame) -> None:
        if "{}" in written:
            return  # xargs fills it in: read with the find before it
        if DYNAMIC.search(written.replace("*", "").replace("?", "").replace("[", "").replace("]", "")):
            self.unread(f"{tool} {written}")
            return
        if frame.cwd is None and not frame.handed and not written.startswith(("/", ROOT)):
            # The step's working dir is not mapped; inside a script, a `cd` left the repository.
            if frame.depth == 0:
                self.found.unplaced.append(written)
            else:
                self.unread(f"{tool} {written}", " (in a folder outside the repository)")
            return
        kept = tuple(p for p in (self.place(i, frame) for i in ignored) if p is not None)
        path = self.place(written, frame)
        if path is None:
            return
        if frame.handed and not self._exists(path):  # it may run in another checkout (the image's, a plugin's)
            self.unread(f"{tool} {written}", " (not in the repository where it is handed to run)")
            return
        # A glob the shell expands: each file it matches; none, and pytest gets the pattern (test-missing).
        for hit in (self.glob(path) or [path]) if GLOB.search(written) else [path]:
            self.found.refs.append(CommandPath(hit, written, tool, frame.command, kept))

    def glob(self, pattern: str) -> list[str]:
        """Tracked files a shell glob matches (`*` stays within one folder)."""
        return self.index.shell_glob(pattern)

    def place(self, written: str, frame: Frame) -> str | None:
        """The repo-relative path of `written`; for handed-on text, from the root when not under the cwd."""
        if written.startswith(ROOT):
            return joined("", written[len(ROOT):].lstrip("/"))
        if written.startswith("/"):
            return map_workdir(written, self.mapping) or None
        here = joined(frame.cwd, written) if frame.cwd is not None else None
        if frame.handed and (here is None or not self._exists(here)):
            there = joined("", written)
            if there is not None and (here is None or self._exists(there)):
                return there
        return here or None

    def _exists(self, path: str) -> bool:
        return path in self.index.bit or self.index.is_dir(path) or bool(GLOB.search(path) and self.glob(path))

    def cd(self, frame: Frame, args: list[str]) -> tuple[str | None, bool]:
        """The new working dir (None: unknown, computed or outside the repository), and whether it is still
        only a guess: a relative `cd` in handed-on text moves from a folder that was not known."""
        target = next((a for a in args if not a.startswith("-")), None)
        if target is None or DYNAMIC.search(target):
            return None, False
        if target.startswith(("/", ROOT)):
            return self.place(target, frame), False
        return (joined(frame.cwd, target) if frame.cwd is not None else None), frame.handed

    def find(self, args: list[str], frame: Frame) -> list[str]:
        """The tracked files `find DIRS [-maxdepth N] [-name P] [-not -name P] [-path P] ...` lists."""
        starts = find_starts(args)
        dirs = [self.place(a, frame) for a in starts]
        tests = find_tests(args[len(starts):])
        out: list[str] = []
        for written, folder in zip(starts, dirs, strict=True):
            if folder is None or DYNAMIC.search(written):
                continue
            shown = written.rstrip("/")
            for path in self.index.files(self.index.prefix(folder.rstrip("/") + "/") if folder else
                                         self.index.prefix("")):
                rest = path[len(folder.rstrip("/")) + 1:] if folder else path
                if find_passes(tests, rest, f"{shown}/{rest}"):
                    out.append(path)
        return out

    def xargs(self, args: list[str], files: list[str], frame: Frame) -> None:
        """`find ... | xargs [-0 -n1 -I{} ...] pytest ...`: the tool runs every file found."""
        index = 0
        while index < len(args) and args[index].startswith("-"):
            index += 2 if args[index] in ("-n", "-I", "-P", "-L", "-d", "-a", "-s", "-E") else 1
        command = strip_prefix(args[index:])
        tool = tool_of(command) if command else None
        if tool is not None:
            for path in files:
                self.found.refs.append(CommandPath(path, path, tool, frame.command))


def _assigned(words: Sequence[str]) -> dict[str, str]:
    return dict(word.split("=", 1) for word in words if ASSIGNMENT.match(word))


def _with(frame: Frame, words: Sequence[str]) -> dict[str, str]:
    """The variables a program a simple command runs sees: the frame's, and the command's assignments."""
    return {**frame.variables, **_assigned(words)}


def _shown(text: str, width: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."
