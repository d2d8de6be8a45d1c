"""What `pipegen import` says: what it wrote, what selects, what it could not carry over, what to run next."""

from __future__ import annotations

from collections.abc import Sequence

from pipegen.importer.convert import Imported
from pipegen.importer.upload_model.verdict import Finding, describe

SHOWN_NOTES = 20


def report(result: Imported, differences: Sequence[Finding], out_dir: str, inputs: Sequence[str]) -> str:
    lines = [f"Imported {result.steps} step{'s' * (result.steps != 1)} from {', '.join(inputs)} into {out_dir}/: "
             f"{', '.join(sorted(result.files))}"]
    if result.families:
        made = ", ".join(f"{name} ({tags})" for name, tags in result.families.items())
        lines.append(f"Families: {made}")
    else:
        lines.append("Families: none (no step names agents; no hardware.yaml)")
    if result.selecting:
        keys = ", ".join(result.selecting[:10]) + (f" and {len(result.selecting) - 10} more"
                                                    if len(result.selecting) > 10 else "")
        lines.append(f"Selected by the paths they watched: {len(result.selecting)} step"
                     f"{'s' * (len(result.selecting) != 1)} ({keys}); the others run on every build, as before")
    elif any("--paths-field" in item.message for item in result.missing):
        lines.append("No step watched paths that pipegen import reads: another tool's path field is named below")
    else:
        lines.append("No step watched paths (if_changed, monorepo-diff): every step runs on every build, as "
                     "before; add source_file_dependencies to select")
    if result.notes:
        lines.append("Notes:")
        lines += [f"  {note}" for note in result.notes[:SHOWN_NOTES]]
        if len(result.notes) > SHOWN_NOTES:
            lines.append(f"  ... and {len(result.notes) - SHOWN_NOTES} more notes")
    if result.missing or differences:
        lines.append("Not carried over (the files are written with everything else):")
        lines += [f"  {item}" for item in result.missing]
        if differences:
            lines.append("Rendered with --all, it differs from the input as Buildkite would run both:")
            lines += describe(list(differences))
    else:
        lines.append("Proven: rendered with --all, it equals the input as Buildkite reads both.")
    config = f"{out_dir}/pipegen.yaml"
    lines.append(f"Next: pipegen check --config {config}; pipegen select --config {config}")
    return "\n".join(lines) + "\n"
