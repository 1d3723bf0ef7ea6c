"""The tool-agent family of `pos trapbench`: a scripted agent in a simulated workspace.

`workspace.py` executes tool calls against files and the tasks' state, with the noise of real
tool output (`noise.py`). The tasks (`tasks.py` lists them) are a failing test suite
(`failing_tests.py`), a service behind nginx (`service.py`), a job queue (`pipeline.py`) and a
code migration found with a paged search (`migration.py`). `generate.py` plays the
trajectories, injects the traps (shaped by `traps.py`) and labels every step; `records.py` is
the on-disk format; `corpus.py` writes and reads the folder.
"""
