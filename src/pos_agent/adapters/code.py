"""Tool calls inside the Python code an agent writes (smolagents' `CodeAgent`, its default
agent): `print(read_file(path="app.py"))` calls `read_file` with `{"path": "app.py"}`.

The monitor compares these calls, not the code around them, so a loop that reads one file
again and again is seen as such even when the code wrapping the call changes. Read statically
(`ast`), never run. A call counts when it names a plain function that is neither a Python
builtin nor defined in the code itself; `final_answer` (the end of the run) is left out.
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Any

from pos_agent.monitor import ToolCall

__all__ = ["FINAL_ANSWER", "code_answer", "code_blocks", "code_calls"]

FINAL_ANSWER = "final_answer"
_BUILTINS = frozenset(dir(builtins))
# smolagents' tags: `<code>...</code>` by default, or Markdown fences (`code_block_tags=
# "markdown"`); the closing tag may be missing (it is one of the model's stop sequences).
_BLOCK = re.compile(
    r"<code>\s*\n?(?P<tagged>.*?)(?:</code>|\Z)|```(?:python|py)?[ \t]*\n(?P<fenced>.*?)(?:```|\Z)",
    re.DOTALL,
)


def code_blocks(text: str) -> list[str]:
    """The code blocks of a model's answer, in order."""
    return [m.group("tagged") or m.group("fenced") or "" for m in _BLOCK.finditer(text or "")]


def _value(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node)


def _defined(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def code_calls(code: str, *, skip: frozenset[str] = frozenset({FINAL_ANSWER})) -> list[ToolCall]:
    """The tool calls in `code`, in source order (empty when it calls none or does not parse).
    Keyword arguments become the call's arguments; positional ones `{"args": [...]}`; values
    that are not literals keep their source text."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    local = _defined(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        name = node.func.id
        if name in _BUILTINS or name in local or name in skip:
            continue
        arguments: dict[str, Any] = {
            k.arg: _value(k.value) for k in node.keywords if k.arg is not None
        }
        if node.args:
            arguments = {"args": [_value(a) for a in node.args], **arguments}
        found.append((node.lineno, node.col_offset, ToolCall(name, arguments)))
    return [call for _, _, call in sorted(found, key=lambda f: (f[0], f[1]))]


def code_answer(original: str, code: str, thought: str) -> str:
    """An answer in the code format of `original` (its tags) that runs `code`."""
    if "```" in (original or "") and "<code>" not in (original or ""):
        return f"Thought: {thought}\n```py\n{code}\n```"
    return f"Thought: {thought}\n<code>\n{code}\n</code>"
