"""A griffe extension for the API reference: the paper's equation numbers in docstrings
(`[4]`, `[5a]`, `[5b]`, `[5c]`) are text, not Markdown reference links.

`H = 1 - max_X [P_X * max(S, R)] [5c]` reads to Markdown as a link to a reference named `5c`,
which the cross-reference plugin then fails to find; escaping the brackets of an equation
number keeps it as the text it is. Loaded by mkdocstrings (`extensions:` in mkdocs.yml).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EQUATION = re.compile(r"\[(\d{1,2}[a-z]?)\]")


class EquationNumbers(griffe.Extension):
    """Escape `[5c]`-style equation numbers in every docstring of a loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _escape(pkg, set())


def _escape(obj: griffe.Object, seen: set[str]) -> None:
    if obj.path in seen:
        return
    seen.add(obj.path)
    if obj.docstring is not None:
        obj.docstring.value = _EQUATION.sub(r"\\[\1\\]", obj.docstring.value)
    for member in obj.members.values():
        if not member.is_alias:
            _escape(member, seen)  # type: ignore[arg-type]
