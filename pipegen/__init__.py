"""pipegen: decide which CI steps a change needs and render them for Buildkite."""

__version__ = "0.1.0"
