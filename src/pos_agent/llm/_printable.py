"""Text from outside (server bodies, model replies, tool output, file contents) made safe to
print on a terminal.

A terminal obeys the bytes it is sent: ESC starts CSI and OSC sequences that move the cursor,
recolour or clear the screen, retitle the window or write a clickable link; a carriage return or
backspace overwrites what was printed; Unicode bidi controls reorder a line so that it reads
otherwise than it is. An error body that carries them could hide or forge what a run printed.
`printable` shows every such character as a visible escape (`\\x1b`, `\\r`, `\\u202e`), keeping
newlines and tabs; everything else is left as it is. The CLI adds rich-markup escaping on top
(`pos_agent.cli.common.shown`); the model layer passes server text through this before logging.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the Unicode bidi embeddings, overrides
# and isolates, plus the line and paragraph separators some terminals honour.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x1b": "\\x1b"}


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(value: object) -> str:
    """`value` as text with every terminal control character shown as an escape."""
    return _UNPRINTABLE.sub(_visible, str(value))
