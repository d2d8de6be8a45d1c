"""`pipegen import`: a hand-written Buildkite pipeline -> pipegen's declarations, rendered back and compared.

What real pipelines (JuliaGPU's, buildkite/agent's, elastic's, monorepo-diff users') broke, as small
synthetic inputs; the fetched pipelines themselves are never copied here."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from pipegen.cli import cli

from ..helpers import commit_files, git_repo


def run(root, *args):
    result = CliRunner().invoke(cli, ["import", *[str(root / a) if a.endswith((".yml", ".yaml")) else a for a in args]],
                                env={"PIPEGEN_CACHE_DIR": ""})
    assert isinstance(result.exception, (SystemExit, type(None))), result.exception  # never a traceback
    return result


OUT = ".buildkite/pipegen"  # the import's default folder: its own, beside the repository's .buildkite/steps/


def written(root, name):
    return yaml.safe_load((root / OUT / name).read_text())


def steps_of(root):
    return [s for f in sorted((root / OUT / "steps").iterdir()) for s in yaml.safe_load(f.read_text())["steps"]]


PIPELINE = """\
env: {GLOBAL: "1"}
steps:
  - label: ":go: test"
    command: go test ./...
    agents: {queue: linux}
    if_changed: ["src/**", "go.{mod,sum}"]
  - label: lint
    command: make lint
    agents: {queue: linux}
  - wait
  - group: Docs
    key: docs-group
    steps:
      - name: build docs
        key: docs
        commands: [make docs, "echo $$HOME"]
        if_changed: {include: "docs/*", exclude: docs/x.md}
  - wait: ~
    continue_on_failure: true
  - label: Deploy
    command: ./deploy
    agents: {queue: deploy, os: linux}
    depends_on: docs-group
"""


def repo(tmp_path, pipeline=PIPELINE, files=None):
    return git_repo(tmp_path / "r", {".buildkite/pipeline.yml": pipeline, "src/a.go": "package a\n",
                                     "docs/a.md": "# a\n", "go.mod": "module a\n", **(files or {})})


def test_a_pipeline_becomes_a_config_steps_files_and_families_and_is_proven_equal(tmp_path):
    root = repo(tmp_path)
    result = run(root, ".buildkite/pipeline.yml")
    assert result.exit_code == 0, result.output
    assert "Proven: rendered with --all, it equals the input as Buildkite reads both." in result.output
    assert written(root, "pipegen.yaml") == {
        "steps": [f"{OUT}/steps"], "hardware": f"{OUT}/hardware.yaml", "no_dependencies": "run",
        "unselected": "skip", "interpolate": ["*"], "pipeline": {"env": {"GLOBAL": "1"}}}
    assert written(root, "hardware.yaml")["families"] == {
        "default": {"vendor": "cpu", "template": "plain"},  # a step without agents gets none, as before
        "linux": {"vendor": "cpu", "agents": {"queue": "linux"}, "template": "plain"},
        "deploy-os-linux": {"vendor": "cpu", "agents": {"queue": "deploy", "os": "linux"}, "template": "plain"}}
    test, lint, wait, docs, wait_on, deploy = steps_of(root)
    assert test["source_file_dependencies"] == ["src/**", "go.mod", "go.sum"] and "if_changed" not in test
    assert "source_file_dependencies" not in lint  # watched nothing: runs on every build, as before
    assert (wait, wait_on) == ("wait", {"wait": None, "continue_on_failure": True})  # the structure, as written
    assert docs["source_file_dependencies"] == ["docs/*", "!docs/x.md"] and "hardware" not in docs  # no agents
    assert yaml.safe_load((root / OUT / "steps/02-docs.yaml").read_text())["group"] == {
        "group": "Docs", "key": "docs-group"}
    assert deploy["depends_on"] == "docs-group" and deploy["hardware"] == ["deploy-os-linux"]
    assert "agents" not in deploy
    assert "Selected by the paths they watched: 2 steps (test, docs)" in result.output


def test_select_on_the_imported_declarations_runs_what_if_changed_ran(tmp_path):
    root = repo(tmp_path)
    run(root, ".buildkite/pipeline.yml")
    commit_files(root, {}, "import")
    commit_files(root, {"docs/b.md": "b\n"})
    select = CliRunner().invoke(cli, ["select", "--root", str(root), "--config", ".buildkite/pipegen/pipegen.yaml", "--base", "HEAD~1",
                                      "--format", "json"],
                                env={"PIPEGEN_CACHE_DIR": ""})
    actions = {s["key"]: s["action"] for s in json.loads(select.stdout)["steps"] if not s["key"].startswith("wait-")}
    assert actions == {"test": "block", "lint": "run", "docs": "run", "deploy": "run"}, select.output
    render = CliRunner().invoke(cli, ["render", "--root", str(root), "--config", ".buildkite/pipegen/pipegen.yaml",
                                      "--base", "HEAD~1"], env={"PIPEGEN_CACHE_DIR": ""})
    steps = {s["key"]: s for s in yaml.safe_load(render.stdout)["steps"] if "key" in s}
    assert steps["test"]["skip"] and "skip" not in steps["lint"]  # skipped, as if_changed skipped it


def test_a_selected_step_that_others_depend_on_is_named(tmp_path):
    # pipegen runs what a selected step depends on; if_changed skipped it and ran the dependent anyway.
    result = run(repo(tmp_path), ".buildkite/pipeline.yml")
    assert "step 'docs' is a dependency of 'deploy': pipegen runs it whenever 'deploy' runs (its path rule " \
           "skipped it before)" in result.output, result.output


def test_it_never_overwrites_declarations_without_force_and_force_replaces_only_its_own(tmp_path):
    root = repo(tmp_path, files={".buildkite/steps/build.sh": "#!/bin/sh\n"})  # buildkite/agent keeps scripts there
    first = run(root, ".buildkite/pipeline.yml")
    assert first.exit_code == 0, first.output
    assert (root / ".buildkite/steps/build.sh").read_text() == "#!/bin/sh\n"  # the default folder is pipegen's own
    before = {p: p.read_bytes() for p in (root / OUT).rglob("*") if p.is_file()}
    (root / OUT / "steps/01-pipeline.yaml").write_text(first_line(root) + "steps: []\n")  # pipegen's, edited
    again = run(root, ".buildkite/pipeline.yml")
    assert again.exit_code == 2
    assert again.output.startswith("pipegen: error: ") and "pipegen import never overwrites declarations" in again.output
    assert "--force" in again.output
    (root / OUT / "steps/99-mine.yaml").write_text("steps: []\n")  # a file pipegen did not write
    refused = run(root, ".buildkite/pipeline.yml", "--force")
    assert refused.exit_code == 2 and "99-mine.yaml: --force replaces only files pipegen import wrote" in refused.output
    (root / OUT / "steps/99-mine.yaml").unlink()
    forced = run(root, ".buildkite/pipeline.yml", "--force")
    assert forced.exit_code == 0, forced.output
    assert {p: p.read_bytes() for p in (root / OUT).rglob("*") if p.is_file()} == before


def first_line(root):
    return (root / OUT / "pipegen.yaml").read_text().splitlines(keepends=True)[0]


def test_force_never_follows_a_link_out_of_the_folder(tmp_path):
    root = repo(tmp_path)
    assert run(root, ".buildkite/pipeline.yml").exit_code == 0
    outside = tmp_path / "outside.yaml"
    outside.write_text(first_line(root) + "mine: 1\n")
    (root / OUT / "pipegen.yaml").unlink()
    (root / OUT / "pipegen.yaml").symlink_to(outside)
    result = run(root, ".buildkite/pipeline.yml", "--force")
    assert result.exit_code == 2 and "pipegen.yaml (a link or not a regular file)" in result.output, result.output
    assert outside.read_text().endswith("mine: 1\n")
    linked = repo(tmp_path / "b")
    (tmp_path / "elsewhere").mkdir()
    (linked / OUT).symlink_to(tmp_path / "elsewhere")  # the folder itself a link
    result = run(linked, ".buildkite/pipeline.yml", "--force")
    assert result.exit_code == 2 and "(a link)" in result.output and not list((tmp_path / "elsewhere").iterdir())


def test_force_on_a_read_only_folder_is_a_message_and_the_old_folder_stays(tmp_path):
    import os
    root = repo(tmp_path)
    assert run(root, ".buildkite/pipeline.yml").exit_code == 0
    before = {p: p.read_bytes() for p in (root / OUT).rglob("*") if p.is_file()}
    os.chmod(root / ".buildkite", 0o555)
    try:
        result = run(root, ".buildkite/pipeline.yml", "--force")
    finally:
        os.chmod(root / ".buildkite", 0o755)
    if os.geteuid() != 0:  # root writes anywhere
        assert result.exit_code == 2 and result.output.startswith("pipegen: error: cannot write"), result.output
    assert {p: p.read_bytes() for p in (root / OUT).rglob("*") if p.is_file()} == before


def test_an_upload_that_leaves_the_repository_is_not_followed(tmp_path):
    (tmp_path / "x.yml").write_text("steps:\n  - {key: evil, command: steal}\n")
    for path in ("../x.yml", str(tmp_path / "x.yml"), ".buildkite/link.yml"):
        root = repo(tmp_path / str(abs(hash(path))), f"steps:\n  - command: buildkite-agent pipeline upload {path}\n")
        (root / ".buildkite/link.yml").symlink_to(tmp_path / "x.yml")
        result = run(root, ".buildkite/pipeline.yml")
        assert result.exit_code == 1, result.output
        assert f"it uploads {path}, which is outside the repository" in result.output
        assert "steal" not in "".join(p.read_text() for p in (root / OUT).rglob("*.yaml"))


def test_bad_input_is_named_by_file_line_and_column(tmp_path):
    root = repo(tmp_path, "steps:\n  - label: a\n    command: make\n  - label: b\n    env: {}\n")
    result = run(root, ".buildkite/pipeline.yml")
    assert result.exit_code == 2
    assert result.output.startswith("pipegen: error: .buildkite/pipeline.yml:4:5: a step with no command"), result.output
    assert not (root / OUT).exists()


def test_the_same_key_in_two_files_is_renamed_with_a_note(tmp_path):
    # elastic's pipelines: `key: build` in pipeline.yml and in pipeline.release.yml.
    root = repo(tmp_path, "steps:\n  - {label: Build, key: build, command: make}\n",
                {".buildkite/release.yml": "steps:\n  - {label: Build, key: build, command: make release}\n"
                                           "  - {label: Publish, command: publish, depends_on: build}\n"})
    result = run(root, ".buildkite/pipeline.yml", ".buildkite/release.yml")
    assert ".buildkite/release.yml:2:5: key 'build' is also a key in .buildkite/pipeline.yml: renamed " \
           "'build-release'" in result.output, result.output
    assert [(s["key"], s.get("depends_on")) for s in steps_of(root)] == [
        ("build", None), ("build-release", None), ("publish", ["build-release"])]


def test_block_input_and_trigger_steps_stay_where_they_were(tmp_path):
    # buildkite/docs' deploy pipeline: a conditional wait, a block, then the deploy; buildkite/agent's E2E trigger.
    pipeline = ("steps:\n  - {label: a, command: make}\n  - wait: ~\n    key: checked\n    if: build.branch == 'main'\n"
                "  - block: Release?\n    key: ok\n  - input: Version\n    fields: [{text: V, key: v}]\n"
                "  - trigger: deploy-pipeline\n    label: Deploy\n    depends_on: ok\n    if_changed: deploy/**\n")
    root = repo(tmp_path, pipeline)
    result = run(root, ".buildkite/pipeline.yml")
    assert result.exit_code == 0, result.output
    assert steps_of(root)[1:] == [
        {"key": "checked", "wait": None, "if": "build.branch == 'main'"}, {"key": "ok", "block": "Release?"},
        {"input": "Version", "fields": [{"text": "V", "key": "v"}]},
        {"label": "Deploy", "key": "deploy", "trigger": "deploy-pipeline", "depends_on": "ok",
         "source_file_dependencies": ["deploy/**"]}]


def test_a_generated_pipeline_is_named_as_not_importable(tmp_path):
    root = repo(tmp_path, "steps:\n  - {label: a, command: make}\n"
                          "  - {label: gen, command: './gen.sh | buildkite-agent pipeline upload'}\n")
    result = run(root, ".buildkite/pipeline.yml")
    assert result.exit_code == 1
    assert ".buildkite/pipeline.yml:3:5: step 'gen': it uploads a generated pipeline (a command's output, or an " \
           "upload among other commands); not importable" in result.output


def test_an_upload_of_a_file_in_the_repository_is_followed(tmp_path):
    # Buildkite's common bootstrap: a step whose only command uploads the repository's pipeline file.
    root = repo(tmp_path, "steps:\n  - {label: ':pipeline:', command: buildkite-agent pipeline upload .buildkite/ci.yml}\n",
                {".buildkite/ci.yml": "env: {X: '1'}\nsteps:\n  - {label: t, key: t, command: make test}\n"})
    result = run(root, ".buildkite/pipeline.yml")
    assert result.exit_code == 0, result.output
    assert ".buildkite/pipeline.yml:2:5: the upload of .buildkite/ci.yml is replaced by its 1 steps" in result.output
    assert steps_of(root) == [{"label": "t", "key": "t", "command": "make test", "env": {"X": "1"}}]


MONOREPO = """\
steps:
  - label: lint
    command: make lint
  - label: Detect changes
    plugins:
      - monorepo-diff#v1.4.0:
          diff: git diff --name-only origin/main...HEAD
          wait: true
          env: [X=1]
          watch:
            - path: [services/api/, "libs/*/proto/**"]
              skip_path: services/api/README.md
              config: {label: API, command: make api}
            - path: services/web
              config: {label: Web, command: make web, timeout_in_minutes: 5}
            - path: services/api/
              config: {label: API, command: make api}
  - label: deploy
    command: ./deploy
"""


def test_a_monorepo_diff_step_becomes_the_steps_it_uploads(tmp_path):
    # buildkite/monorepo-example, the plugin's own e2e pipeline: the plugin step is replaced by its watched
    # steps, each selected by the paths that upload it (the same step under two watches: once, both paths).
    root = repo(tmp_path, MONOREPO, {"services/api/a.go": "a\n", "services/webapp/x.js": "x\n", "libs/x/proto/a.proto": "p\n"})
    result = run(root, ".buildkite/pipeline.yml")
    lint, api, web, wait, deploy = steps_of(root)
    assert api["source_file_dependencies"] == ["services/api/**", "libs/*/proto/**", "!services/api/README.md*"]  # a raw prefix too
    assert web["source_file_dependencies"] == ["services/web*"] and "timeout_in_minutes" not in web
    assert wait == "wait"  # wait: true, after what the plugin uploaded
    assert "watch path 'services/web' is a raw prefix for this plugin version: it also selects services/web* " \
           "(e.g. services/webs/)" in result.output
    assert "a watched step's timeout_in_minutes (the plugin drops them; not imported)" in result.output
    assert "its diff is 'git diff --name-only origin/main...HEAD'; pipegen diffs against the merge base" in result.output
    commit_files(root, {}, "import")
    commit_files(root, {"services/webapp/y.js": "y\n"})
    select = CliRunner().invoke(cli, ["select", "--root", str(root), "--config", ".buildkite/pipegen/pipegen.yaml", "--base", "HEAD~1",
                                      "--format", "json"],
                                env={"PIPEGEN_CACHE_DIR": ""})
    actions = {s["key"]: s["action"] for s in json.loads(select.stdout)["steps"] if not s["key"].startswith("wait-")}
    assert actions == {"lint": "run", "api": "block", "web": "run", "deploy": "run"}  # what the plugin uploaded


def test_what_monorepo_diff_does_that_entries_cannot_is_named(tmp_path):
    root = repo(tmp_path, "steps:\n  - plugins:\n      - chronotc/monorepo-diff#v1.3.0:\n          watch:\n"
                          "            - path: 'app/(a|b)'\n              config: {command: x}\n"
                          "            - path: app/\n              except_path: app/docs/\n              config: {command: y}\n"
                          "            - default: {command: z}\n")
    result = run(root, ".buildkite/pipeline.yml")
    assert result.exit_code == 1
    assert "watch path 'app/(a|b)' is a regular expression (monorepo-diff v1 greps '^PATH')" in result.output
    assert "watch 2's except_path (no source_file_dependencies express it)" in result.output
    assert "watch 3's default (no source_file_dependencies express it)" in result.output
