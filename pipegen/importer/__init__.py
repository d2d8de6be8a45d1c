"""`pipegen import`: a hand-written Buildkite pipeline -> pipegen declarations, proven equal.

  nodes.py         a parsed pipeline file -> Nodes (step kinds as Buildkite tells them apart);
  expand.py        what Buildkite itself would add at run time: a followed `pipeline upload` of a static
                   file, the monorepo-diff plugin's watched steps;
  path_rules.py    the path rules of the tools being replaced (if_changed, monorepo-diff) -> entries;
  convert.py       Nodes -> the config, steps files and hardware inventory (plain data) + notes;
  view.py          a pipeline's steps with their dependencies resolved (where a wait becomes depends_on);
  upload_model/    the proof: an independent model of what Buildkite makes of the input files and of the
                   rendered pipeline, compared (it shares no code with the modules above);
  message.py       what the command says: what it wrote, what selects, what it could not carry over.

All pure: the command (commands/import_.py) reads and writes the files and renders.
"""
