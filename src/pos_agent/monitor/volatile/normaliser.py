"""`Normaliser`: the volatile rules applied to a text in one pass, with a bounded cache."""

from __future__ import annotations

import re
from collections.abc import Iterable

from pos_agent.monitor.volatile.rules import BAR_CHARS, DEFAULT_RULES, VolatileRule

_DEFAULT_SET = frozenset(DEFAULT_RULES)

# Where a default rule's match can start: the character there, in one of these classes (see
# `Normaliser._joined_text`). Word starts (a word character after none) split by the character:
# an ASCII digit or other `\d`, an ASCII letter, any other word character. The rest are
# single characters: a `-` after a word character, `/`, `[`, `|`, `#`, a bar character, and
# white space right after `[` or `(`. The classes are disjoint, so at any place at most one
# applies.
_WORD_STARTS = (("digit", r"(?=\d)"), ("letter", r"(?=[a-z])"), ("word", r"(?![\da-z])"))
# The other classes: the characters that start them (a character set's content), and what
# must come before.
_OTHER_STARTS = (
    ("dash", r"\-", r"(?<=\w)"),
    ("slash", "/", ""),
    ("bracket", r"\[", ""),
    ("pipe", r"\|", ""),
    ("hash", "#", ""),
    ("bar", BAR_CHARS, ""),
    ("space", r"\s", r"(?<=[\[(])"),
)
# Per default rule, the classes its matches can start in (read off its pattern: `\b\d` is a
# digit at a word start, `\b[0-9a-f]` a digit or a letter there, `\[` a bracket, ...).
_STARTS = {
    "iso_timestamp": ("digit",),
    "written_timestamp": ("digit", "letter"),
    "epoch_time": ("digit",),
    "date": ("digit",),
    "clock_time": ("digit",),
    "uuid": ("digit", "letter"),
    "memory_address": ("digit",),
    "labelled_id": ("letter",),
    "prefixed_id": ("letter",),
    "pod_name": ("digit", "letter"),
    "hex_id": ("digit", "letter"),
    "temp_path": ("slash", "letter"),
    "ip_address": ("digit", "bracket"),
    "port": ("digit", "letter", "word", "dash"),
    "pid": ("letter",),
    "rate": ("digit",),
    "duration": ("digit",),
    "size": ("digit",),
    "percentage": ("digit",),
    "progress_bar": ("bracket", "pipe", "hash", "bar"),
    "meter_count": ("digit", "space"),
    "token_count": ("digit", "letter"),
    "counter": ("letter",),
}
_DEFAULT_STARTS = {rule: frozenset(_STARTS[rule.name]) for rule in DEFAULT_RULES}


class Normaliser:
    """Applies a list of volatile rules to texts in one pass, with a bounded cache (agents
    repeat themselves, which is what the monitor is looking for).

    The rules that can match a text (its digits and each rule's `triggers` say which) are
    joined into one alternation and the text is scanned once, left to right: the leftmost
    match is replaced, and where two rules match at the same place the earlier rule in the list
    wins (so a full timestamp is taken before the clock time inside it). Replaced text is never
    scanned again, so a placeholder is never rewritten by a later rule.
    """

    _CACHE_LIMIT = 50_000

    def __init__(
        self,
        rules: Iterable[VolatileRule] = DEFAULT_RULES,
        *,
        extra: Iterable[VolatileRule] = (),
    ) -> None:
        self.rules: tuple[VolatileRule, ...] = (*rules, *extra)
        self._templates: dict[str, str] = {}
        self._expansions: dict[str, tuple[str, ...]] = {}
        self._parts = [self._part(f"_r{i}", rule) for i, rule in enumerate(self.rules)]
        # Which rules a text may need, as bit masks over `rules` (bit i: rule i): the rules
        # without triggers, and per trigger the rules it lets in; each also for texts without
        # a digit, where the rules that need one are left out.
        untriggered = digitless = 0
        openers: dict[str, int] = {}
        for i, rule in enumerate(self.rules):
            bit = 1 << i
            if not rule.needs_digit:
                digitless |= bit
            if not rule.triggers:
                untriggered |= bit
            for trigger in rule.triggers:
                openers[trigger] = openers.get(trigger, 0) | bit
        self._untriggered = untriggered
        self._openers = tuple(openers.items())
        self._digitless_untriggered = untriggered & digitless
        self._digitless_openers = tuple(
            (trigger, rules & digitless) for trigger, rules in openers.items() if rules & digitless
        )
        self._joined: dict[int, re.Pattern[str]] = {}
        self._cache: dict[str, str] = {}

    def _part(self, name: str, rule: VolatileRule) -> str:
        # Each rule's groups get names of their own in the joined pattern.
        pattern = _GROUP.sub(lambda m: f"(?P<{name}_{m.group(1)}>", rule.pattern)
        pattern = _BACKREF.sub(lambda m: f"(?P={name}_{m.group(1)})", pattern)
        self._templates[name] = _REFERENCE.sub(
            lambda m: f"\\g<{name}_{m.group(1)}>", rule.placeholder
        )
        # A placeholder of plain text and references to the rule's own groups is expanded
        # without `Match.expand`, which parses the template again on every match.
        parts = _REFERENCE.split(rule.placeholder)
        groups = set(_GROUP.findall(rule.pattern))
        if not any("\\" in text for text in parts[0::2]) and groups.issuperset(parts[1::2]):
            self._expansions[name] = tuple(
                text if k % 2 == 0 else f"{name}_{text}" for k, text in enumerate(parts)
            )
        return f"(?P<{name}>{pattern})"

    def _pattern(self, mask: int) -> re.Pattern[str]:
        joined = self._joined.get(mask)
        if joined is None:
            joined = re.compile(
                self._joined_text([i for i in range(len(self.rules)) if mask >> i & 1])
            )
            if len(self._joined) < 4096:
                self._joined[mask] = joined
        return joined

    def _joined_text(self, active: list[int]) -> str:
        """The alternation of the `active` rules (indices into `rules`, in order).

        A default rule only matches where its `_STARTS` classes say. The leading default rules
        are dispatched on the character at each place: a word start tries only the rules that
        can start with that character, another place only those that can start there, every
        other place none, each at the cost of a test or two instead of trying every rule there.
        At any place the rules tried are those of the one class that applies, in list order,
        so the earliest rule that matches there still wins. Rules of the caller's come after
        the dispatched ones and are tried at every place."""
        lead = 0
        while lead < len(active) and self.rules[active[lead]] in _DEFAULT_SET:
            lead += 1

        def rules(start: str) -> str:
            return "|".join(
                self._part(f"_{start}{i}", self.rules[i])
                for i in active[:lead]
                if start in _DEFAULT_STARTS[self.rules[i]]
            )

        word = [f"{test}(?:{found})" for start, test in _WORD_STARTS if (found := rules(start))]
        other = [
            (chars, f"{behind}(?=[{chars}])(?:{found})")
            for start, chars, behind in _OTHER_STARTS
            if (found := rules(start))
        ]
        parts = []
        if word:
            parts.append(rf"(?<!\w)(?=\w)(?:{'|'.join(word)})")
        if other:
            # One test on the characters the classes in use start with, then the classes.
            chars = "".join(chars for chars, _ in other)
            parts.append(f"(?=[{chars}])(?:{'|'.join(branch for _, branch in other)})")
        return "|".join(parts + [self._parts[i] for i in active[lead:]])

    def _replace(self, match: re.Match[str]) -> str:
        name = match.lastgroup
        if name is None or (template := self._templates.get(name)) is None:
            return match.group(0)
        if "\\" not in template:
            return template
        parts = self._expansions.get(name)
        if parts is None:
            # A group that did not take part in the match expands to "".
            return match.expand(template)
        # Text and group names alternate; a group that did not take part adds "", as in
        # `Match.expand`.
        text = parts[0]
        for k in range(1, len(parts), 2):
            text += (match.group(parts[k]) or "") + parts[k + 1]
        return text

    def __call__(self, text: str) -> str:
        """`text`, lower-cased, with every volatile token replaced by its rule's placeholder."""
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        lowered = text.lower()
        # Rules that cannot match are left out of the pattern (see `VolatileRule.needs_digit`
        # and `triggers`); bit masks say which are in.
        if _DIGIT.search(lowered) is not None:
            mask, openers = self._untriggered, self._openers
        else:
            mask, openers = self._digitless_untriggered, self._digitless_openers
        for trigger, rules in openers:
            if trigger in lowered:
                mask |= rules
        result = self._pattern(mask).sub(self._replace, lowered) if mask else lowered
        if len(self._cache) < self._CACHE_LIMIT:
            self._cache[text] = result
        return result


_GROUP = re.compile(r"\(\?P<(\w+)>")
_BACKREF = re.compile(r"\(\?P=(\w+)\)")
_REFERENCE = re.compile(r"\\g<(\w+)>")
_DIGIT = re.compile(r"\d")
_DEFAULT = Normaliser()


def normalise(text: str, rules: Iterable[VolatileRule] | None = None) -> str:
    """`text`, lower-cased, with its volatile tokens replaced (the default rules unless `rules`
    is given)."""
    if rules is None:
        return _DEFAULT(text)
    return Normaliser(rules)(text)
