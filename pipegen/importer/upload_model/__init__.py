"""An independent model of what Buildkite makes of uploaded pipeline files: the proof behind `pipegen import`.

Kept apart from the converter (it imports nothing of pipegen/importer/ outside this folder, and reads the
files' text itself), so the two cannot share a blind spot:

  agent_yaml.py     YAML as the agent parses it (yaml.v3: YAML 1.2's core schema, duplicate keys refused);
  interpolation.py  upload-time interpolation, symbolic in the uploader's environment;
  step_fields.py    a step's kind and fields as the build holds them;
  build.py          uploads -> the build's jobs, what each waits for, its notify;
  verdict.py        two builds compared: equal, or what differs.

The Buildkite documentation each rule follows is named where the rule is written (module docstrings);
the facts pipegen relies on are in /work/shared/spec/buildkite.md.
"""
