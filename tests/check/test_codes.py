"""One registry of check's codes (pipegen/check/codes.py): every code the code emits is in it, and every code in
it is emitted somewhere. Read from the source with `ast`, so a new finding cannot be missed by a test's input."""

from __future__ import annotations

import ast
from pathlib import Path

from pipegen.check.codes import CODES
from tests.helpers import CHECK_CONFIG, CLEAN_STEP, check, check_repo

ROOT = Path(__file__).resolve().parent.parent.parent
# Where a code is handed on, not made: a loader warning becomes a finding with the warning's code.
PASSED_ON = {("pipegen/check/checker.py", "warning.code")}


def _constants(tree: ast.Module) -> dict[str, str]:
    """The module's NAME = "text" assignments."""
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for t in node.targets if isinstance(t, ast.Name)}


def _code_argument(call: ast.Call, name: str) -> ast.expr | None:
    position = 0 if name == "Finding" else 1  # Finding(code, ...), DeclarationWarning(location, code, ...)
    given = [k.value for k in call.keywords if k.arg == "code"]
    return given[0] if given else call.args[position] if len(call.args) > position else None


def emitted() -> tuple[dict[str, list[str]], list[str]]:
    """Each code made in pipegen's source, with where; and the calls whose code is no literal nor handed on."""
    found: dict[str, list[str]] = {}
    unread = []
    for path in sorted((ROOT / "pipegen").rglob("*.py")):
        text, name = path.read_text(), str(path.relative_to(ROOT))
        if "pipegen.check.findings import" not in text and "DeclarationWarning(" not in text:
            continue  # importer/upload_model has a Finding of its own
        tree = ast.parse(text)
        constants = _constants(tree)
        for node in ast.walk(tree):
            func = getattr(node, "func", None)
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if not isinstance(node, ast.Call) or called not in ("Finding", "DeclarationWarning"):
                continue
            arg = _code_argument(node, called)
            code = arg.value if isinstance(arg, ast.Constant) else constants.get(arg.id) \
                if isinstance(arg, ast.Name) else None
            if isinstance(code, str):
                found.setdefault(code, []).append(f"{name}:{node.lineno}")
            elif arg is None or (name, ast.unparse(arg)) not in PASSED_ON:
                unread.append(f"{name}:{node.lineno}")
    return found, unread


def test_every_emitted_code_is_in_the_registry_and_every_registered_one_is_emitted() -> None:
    found, unread = emitted()
    assert {"stale-entry", "ignored-field", "unmatched-key", "declaration-error"} <= set(found)  # all three kinds read
    assert unread == [], "write the code as a literal (or a module constant) so that it can be checked"
    assert {code: where for code, where in found.items() if code not in CODES} == {}, "add them to check/codes.py"
    assert set(CODES) - set(found) == set(), "codes nothing emits: remove them from check/codes.py"


def test_every_code_has_a_severity_a_trigger_and_a_fix() -> None:
    for code, entry in CODES.items():
        assert entry.severity.split()[0] in ("error", "warning", "info"), code
        assert entry.trigger and entry.fix and not entry.trigger.endswith("."), code


def test_a_loader_warning_takes_its_severity_from_the_registry(tmp_path: Path) -> None:
    config = CHECK_CONFIG + "always_run: [no-such-step]\n"
    root = check_repo(tmp_path, CLEAN_STEP, config=config)
    code, report = check(root)
    assert CODES["unmatched-key"].severity == "error"
    assert [(f["code"], f["severity"]) for f in report["findings"] if f["code"] == "unmatched-key"] == \
        [("unmatched-key", "error")]
    assert code == 1
