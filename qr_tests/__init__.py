"""The bundled quick-reduce suite: a pure-PyTorch reference of QuickReduce (codec,
wire format, two-shot all-reduce), vLLM's communicator surface and its tests."""
