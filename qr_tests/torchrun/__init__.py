"""The torchrun examples: a tiny seeded transformer launched under torchrun with vLLM's
TP/PP/DP/EP layouts, every rank checked against the others and a one-process run."""
