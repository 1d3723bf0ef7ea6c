"""The tool-agent family of `pos trapbench`: a scripted agent in a simulated workspace.

`workspace.py` executes tool calls against files and the tasks' state (`tasks.py`: a test
suite, a service behind nginx, a job queue, a code migration found with a paged search), with
the noise of real tool output (`noise.py`). `generate.py` plays the trajectories, injects the
traps and labels every step; `records.py` is the on-disk format; `corpus.py` writes the folder.
"""
