"""vLLM's current layout: `.buildkite/ci_config.yaml` and the steps files under its `job_dirs`.

The dialect (dialects/interface.py) that claims a config with `job_dirs`; its settings are the vLLM preset.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipegen.declarations.assemble import finish, read_steps_files
from pipegen.declarations.discover import steps_files
from pipegen.declarations.field import Field
from pipegen.declarations.fields import Checker, anything, check_fields, regex_list, string, string_list
from pipegen.declarations.yaml_values import LocDict, LocList
from pipegen.dialects.interface import Source
from pipegen.dialects.vllm.keys import refuse_undeclared
from pipegen.dialects.vllm.order import by_name
from pipegen.dialects.vllm.presets import GENERATOR, vllm_settings
from pipegen.dialects.vllm.steps import load_steps_file
from pipegen.model import Declarations, DeclarationWarning, Step

NAME = "vllm"
SUFFIXES = (".yaml",)  # vLLM's generator reads only these (ci-infra step.py)

CONFIG_FIELDS: dict[str, Checker] = {
    "name": Field(string, "The pipeline's name (the inventory's build context: config_name).", example="vllm_ci"),
    "job_dirs": Field(string_list, "Folders of steps files (`*.yaml`), read as the generator reads them (required).",
                      example=[".buildkite/test_areas"]),
    "run_all_patterns": Field(regex_list, "A changed file one of these matches (Python's re.match) runs every step.",
                              example=["docker/Dockerfile", "requirements/"]),
    "run_all_exclude_patterns": Field(regex_list, "... unless the file also matches one of these.",
                                      example=["docker/Dockerfile\\."]),
    "registries": Field(anything, "Image registries (the inventory's build context).",
                        example="public.ecr.aws/q9t5s3a7", words="string"),
    "repositories": Field(anything, "Image repositories by name (the inventory's build context: repositories.NAME).",
                          example={"main": "vllm-ci-test-repo"}, words="mapping of name: repository"),
    "github_repo_name": Field(string, "The GitHub repository; vllm-project/vllm gives steps in files with a "
                              "depends_on the working dir /vllm-workspace/tests.", default="vllm-project/vllm",
                              example="vllm-project/vllm"),
}


def claims(top: LocDict) -> bool:
    return "job_dirs" in top



check_keys = refuse_undeclared

def page_order(steps: Sequence[Step]) -> list[Step]:
    return by_name(steps)

def load(source: Source) -> Declarations:
    root, top = source.root, source.top
    warnings: list[DeclarationWarning] = []
    fields = check_fields(top, CONFIG_FIELDS, "ci_config", lenient=GENERATOR, warnings=warnings)
    settings = vllm_settings(
        run_all=fields.get("run_all_patterns", ()),
        run_all_exclude=fields.get("run_all_exclude_patterns", ()),
        build_values=_build_values(fields),
    )
    # vLLM defaults the working dir of steps in files with a group-level depends_on.
    vllm_itself = fields.get("github_repo_name", "vllm-project/vllm") == "vllm-project/vllm"
    working_dir = "/vllm-workspace/tests" if vllm_itself else None
    files: list[str] = []
    job_dirs = top["job_dirs"]
    for index, entry in enumerate(fields.get("job_dirs", ())):
        where = job_dirs.loc(index) if isinstance(job_dirs, LocList) else top.loc("job_dirs")
        files += steps_files(root, entry, where, SUFFIXES, warnings)
    steps = read_steps_files(root, files, source.docs,
                             lambda data, name: load_steps_file(data, name, warnings, working_dir))
    return finish(root, steps, settings, NAME, [source.path, *files], warnings)


def _build_values(fields: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """ci_config.yaml's name, registries, repositories and github_repo_name, as values for the inventory's
    build context."""
    values = [("config_name", fields["name"])] if isinstance(fields.get("name"), str) else []
    if isinstance(fields.get("registries"), str):
        values.append(("registries", fields["registries"]))
    if isinstance(fields.get("github_repo_name"), str):
        values.append(("github_repo", fields["github_repo_name"]))
    for name, repository in (fields.get("repositories") or {}).items():
        if isinstance(repository, str):
            values.append((f"repositories.{name}", repository))
    return tuple(values)
