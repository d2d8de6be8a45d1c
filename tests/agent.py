"""A stand-in `buildkite-agent` on PATH that records each call, for the plugin hook's tests and render --annotate's."""

from __future__ import annotations

from pathlib import Path

AGENT = """#!/bin/sh
# records one call: its arguments and its standard input; exits with $FAKE_<SUBCOMMAND>_EXIT;
# annotate sleeps $FAKE_ANNOTATE_SLEEP seconds first (a hanging agent), in a child as a real agent's would,
# then prints $FAKE_ANNOTATE_SAYS
n=$(ls "$RECORD" | grep -c "args$")
printf '%s\\n' "$@" > "$RECORD/$n.args"
cat > "$RECORD/$n.stdin"
case "$1" in
  annotate) echo $$ > "$RECORD/$n.pid"
            [ -n "$FAKE_ANNOTATE_SLEEP" ] && sleep "$FAKE_ANNOTATE_SLEEP"
            printf '%s\n' "${FAKE_ANNOTATE_SAYS:-fake agent: annotate says goodbye}"; exit "${FAKE_ANNOTATE_EXIT:-0}" ;;
  pipeline) [ "$2" = upload ] && cp "$3" "$RECORD/$n.uploaded"; exit "${FAKE_UPLOAD_EXIT:-0}" ;;
esac
"""


def install(tmp_path: Path) -> tuple[Path, Path]:
    """The fake agent in a new folder to put first on PATH, and the (empty) folder it records in
    ($RECORD in its environment)."""
    bin_dir, record = tmp_path / "bin", tmp_path / "record"
    bin_dir.mkdir(parents=True, exist_ok=True)
    record.mkdir(exist_ok=True)
    (bin_dir / "buildkite-agent").write_text(AGENT)
    (bin_dir / "buildkite-agent").chmod(0o755)
    return bin_dir, record


def calls(record: Path) -> list[dict[str, str]]:
    """The calls the agent got, in order: their arguments (one a line), stdin, and the file uploaded."""
    out = []
    for n in range(len(list(record.glob("*.args")))):
        call = {"args": (record / f"{n}.args").read_text(), "stdin": (record / f"{n}.stdin").read_text()}
        if (record / f"{n}.uploaded").exists():
            call["uploaded"] = (record / f"{n}.uploaded").read_text()
        out.append(call)
    return out
