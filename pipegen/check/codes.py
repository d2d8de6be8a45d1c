"""Every code `pipegen check` reports, in one place: its severity, what triggers it, and its fix.

The order is the summary's. The loader's warnings take their severity from here; tests/check/test_codes.py
proves every code the code emits is listed, and docs/reference/check-findings.md is generated from it.
"""

from __future__ import annotations

from pipegen.frozen import frozen


@frozen
class Code:
    severity: str  # as reported without --strict (which makes every warning an error)
    trigger: str  # when check reports it (Markdown, as fix)
    fix: str  # what the finding's own fix line says, in general


CODES: dict[str, Code] = {
    "declaration-error": Code(
        "error (exit 2)", "the CI declarations cannot be loaded: every step's and steps file's error, in one pass",
        "the message names the file, line and field; fix the declaration as it says"),
    "ignored-field": Code(
        "warning", "a field vLLM's generator silently drops (a misspelt field, a mirror other than 'amd')",
        "use the field that was meant (named when one is close), or remove it"),
    "ignored-file": Code(
        "warning", "a YAML file in a steps folder that is not loaded (`*.YAML`; in vLLM's `job_dirs`, which read "
        "`*.yaml` only, a `*.yml`); scripts and notes beside the steps files are no declarations",
        "rename it to the suffix the folder is read for, or move it out of the folder"),
    "stale-entry": Code(
        "error", "a `source_file_dependencies` entry matches no tracked file",
        "write the nearest real path it names, or remove the entry"),
    "raw-prefix-only": Code(
        "error", "an entry matched only under vLLM's old raw-prefix rule (`tests/test_config` for "
        "`tests/test_config.py`)", "write the path it meant, which the finding names"),
    "exclusion-unused": Code(
        "warning", "a `!entry` of a step, or a run-all exclude pattern, excludes nothing",
        "remove the exclusion or fix its path"),
    "stale-run-all": Code(
        "error", "a run-all pattern matches no tracked file", "write the nearest real path it names, or remove it"),
    "unmatched-key": Code(
        "error", "an `always_run` key or glob, a label's step key or an `external_steps` key names no step (an "
        "external one: no step's `depends_on`); `select` prints the same as a warning",
        "name an existing step (the closest is named), or remove the key"),
    "test-missing": Code(
        "error", "a command names a test file (`pytest`, `python X.py`, `torchrun ... X.py`), or runs a script "
        "(`bash x.sh`, `./x.sh`, `source x.sh`), that is not in the repository; not a script a command before names "
        "(`curl -o x.sh`, `> x.sh`: the step makes it), one handed to an image, or one in a folder that is not "
        "tracked", "fix the path (the closest is named), or remove the command"),
    "test-not-selecting": Code(
        "error", "a change to a test file a step runs would not select that step",
        "add the test's folder to the step's `source_file_dependencies`, or narrow the exclusion that drops it"),
    "workdir-unmapped": Code(
        "warning", "a step runs in a docker working dir that maps to no repository folder, so its test paths "
        "cannot be checked", "map the docker path to the repository with `docker_workdir:` in the config"),
    "tests-unread": Code(
        "warning", "a step runs tests or scripts through text check cannot read statically (`pytest $DIR`, "
        "`bash $SCRIPT`)", "name the test files, or a folder, in the command (or a script's literal arguments)"),
    "no-dependencies": Code(
        "warning", "a step declares no `source_file_dependencies` of its own, whatever runs it (`pytest`, `go test`, "
        "`cargo test`, `ctest`, `npm test`, a plugin): no change selects it, it waits to be unblocked (not for an "
        "optional or always-run step, nor with `no_dependencies: run`)",
        "add the folders it tests to `source_file_dependencies`, or mark it `optional: true` if it is manual"),
    "import-not-covered": Code(
        "warning (error with --strict)", "a repository file in a test's static import closure is covered by no "
        "entry of the test's step: one finding per step and uncovered folder, with the import chain",
        "add the folder (or the files) to the step's `source_file_dependencies`"),
    "derived-drift": Code(
        "error or warning", "a step whose `derive:` says `use: check` has a hand-written list that misses files "
        "the derivation reaches (error, per folder, with the chain) or an entry covering none of them (warning)",
        "add the folder the error names; remove a left-over entry unless the step needs it for another reason"),
    "glob-dialect": Code(
        "warning", "in a config that sets no `globs:`, git's pathspec reading of a glob (`*` crosses `/`) matches "
        "more tracked files than pipegen's", "write `**/` where folders may come between (`src/**/*.rs`), or set "
        "`globs: pathspec` (git's reading) or `globs: gitignore` (pipegen's) in the config"),
    "no-queue": Code(
        "error", "no family of the hardware inventory provides the hardware or GPU count a step asks for, or a "
        "step names no hardware and the inventory has no `default:`", "ask for a family the inventory has (the "
        "closest is named), or add the family, or a `default:`, to the inventory"),
    "mirror-drift": Code(
        "warning", "an AMD twin declared in two places (`mirror.amd` and `test-amd.yaml`) differs in its "
        "dependencies or commands", "declare the AMD variant once (`mirror.amd`) and delete the other, or make "
        "them agree"),
    "upload-limit": Code(
        "error", "everything selected and blocked would exceed the 500 jobs one `buildkite-agent pipeline upload` "
        "accepts", "set `unselected: skip` (no block steps), lower `parallelism`, or split the steps over several "
        "uploads"),
    "invalid-key": Code(
        "error", "a step key (or its `block-` key) Buildkite would refuse, which render rewrites",
        "set an explicit `key:` of letters, digits and `- _ :` short enough for its block key too"),
    "escaped-dollar": Code(
        "warning", "a `$$` in pipegen's own format (Buildkite's escape, copied from a `pipeline.yml`): pipegen "
        "escapes `$` itself, so the job would get `$$`", "write `$` once"),
    "undeliverable-text": Code(
        "error", "a string the agent would not get as declared (a backslash right before a `$`), or on which "
        "Buildkite's upload fails (`${name#* }` in a variable kept by `interpolate:`, or anywhere in vLLM's files); "
        "render refuses it",
        "the finding says how to write it for that field"),
    "variable-not-expanded": Code(
        "warning", "a `$VAR` outside the commands (`artifact_paths`, plugin options, env, labels): pipegen escapes "
        "it and nothing expands it after the upload, so the agent gets the text `$VAR`",
        "list the variable under the config's `interpolate:` so that Buildkite fills it in at upload, or compute "
        "the value in a command"),
    "orphan": Code(
        "info (--orphans)", "a tracked source file no step depends on and no `docs_only` or run-all pattern covers: "
        "changing it runs no test. Source is any programming or build language by the file types of `identify` "
        "(pre-commit's library: Julia, Go, Fortran, CUDA and HIP, Rust, TypeScript, shell, CMake, Dockerfile, ...), "
        "not prose or data (Markdown, YAML, JSON, TOML, CSV)",
        "add it (or its folder) to the `source_file_dependencies` of the steps that test it"),
}
