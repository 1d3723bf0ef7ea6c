"""A labelled trap corpus from real TextWorld games, and detectors scored on it.

`make` generates games (`games.py`), plays the walkthrough and runs with injected segments in
the real game (`build.py`, `segments.py`, `session.py`) and stores them (`records.py`,
`corpus.py`); `eval` runs the detectors (`detectors.py`, `rules.py`) and scores them
(`metrics.py`, `evaluate.py`).
"""
