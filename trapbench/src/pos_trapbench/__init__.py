"""Labelled trap corpora and the trap detectors scored on them.

Two families: real TextWorld games (`games.py` generates them; `build.py`, `segments.py` and
`session.py` play the walkthrough and runs with injected segments; `records.py`, `corpus.py`
store them) and a tool-using agent in a simulated workspace (`toolagent/`). `eval` brings
both to one shape (`runs.py`), runs the detectors (`detectors.py`: belief health through
`TrapMonitor`, and the anchors' rules of `anchor_rules.py`) and scores them (`metrics.py`,
`evaluate.py`).
"""
