"""The quick-reduce suite: a pure-PyTorch reference of QuickReduce (codec, wire format,
two-shot all-reduce), vLLM's communicator surface, the checks that judge them, and the
multi-process harness the tests (and the torchrun examples) run ranks with."""
