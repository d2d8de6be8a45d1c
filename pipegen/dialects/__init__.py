"""The formats pipegen reads, one dialect each behind one interface (dialects/interface.py), as pre-commit's
`languages/` are: pipegen's own (own/), vLLM's current layout and its legacy file (vllm/). The engine knows
no dialect; a third one is a new module listed in dialects/load.py."""
