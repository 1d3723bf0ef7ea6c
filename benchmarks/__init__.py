"""Benchmark scripts: the figures the README and docs quote, printed by scripts run as
`python -m benchmarks.NAME` from the repository root (not part of the installed package)."""
