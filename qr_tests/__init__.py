"""The bundled torch suites, one folder each: quick_reduce/ (the quick-reduce reference and
its tests) and torchrun/ (the torchrun examples, which build on it). conftest.py holds the
pytest bits both share: the needs_gpu marker and the session's seeds."""
