"""The code's own graph, read statically: Python imports (import_scan, import_graph, scan_cache by blob).

A stage below selection, so that `select` (derived dependency entries) and `check` (uncovered imports)
read one graph with one scanner."""
