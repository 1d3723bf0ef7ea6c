"""Volatile tokens: the parts of a tool's output (or of an action) that change on every call
while nothing that matters changed, replaced by a placeholder before any key is made.

A failing `curl` prints a new timestamp and request id each time, a test run ends "in 0.53s",
a download prints a new speed. Counted as first-seen things, such tokens make a loop look like
exploration. `normalise` rewrites them with an ordered list of `VolatileRule`s; novelty, world
keys and action keys are all made from what is left.

The rules run in the order of `DEFAULT_RULES` (more specific shapes first: a timestamp before
the clock time and the date inside it, a UUID before the hex rule, a size-per-second before a
plain size). Each replaces a match with its placeholder (`<time>`, `<uuid>`, ...), so two outputs
that differ only in volatile tokens normalise to the same text. Numbers that carry meaning are
left alone: counts such as "3 failed, 7 passed", line numbers, exit codes and page numbers are
not volatile here. A caller adds rules of its own (`TrapMonitor(volatile=...)`,
`Normaliser(extra=...)`), which run after the defaults, or replaces the list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["DEFAULT_RULES", "Normaliser", "VolatileRule", "normalise"]


@dataclass(frozen=True, slots=True)
class VolatileRule:
    """One kind of volatile token: a regular expression and what replaces each match."""

    name: str
    """Short name, e.g. `uuid`; names the rule in docs and tests."""

    pattern: str
    """The regular expression (Python `re` syntax). It is matched against lower-cased text
    (keys ignore case, and case-sensitive matching is several times cheaper), so write it in
    lower case."""

    placeholder: str
    """What replaces each match; may use group references such as `\\g<key>`."""

    needs_digit: bool = False
    """The pattern only matches text with a digit in it, so texts without one skip it."""

    triggers: tuple[str, ...] = ()
    """The pattern only matches text holding one of these substrings (lower case), so other
    texts skip it; empty: always tried. A cheap test that keeps the joined pattern short."""

    def compile(self) -> re.Pattern[str]:
        """The rule alone, as it runs: on lower-cased text."""
        return re.compile(self.pattern)


_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_WEEKDAY = r"(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?"
_CLOCK = r"\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:\s?[ap]\.?m\.?\b)?"
_ZONE = r"(?:\s?(?:z\b|utc\b|gmt\b|[ecmpa][sd]t\b|cest?\b|bst\b|ist\b|jst\b|[+-]\d{2}:?\d{2}\b))?"
_NUMBER = r"\d+(?:[.,]\d+)?"
_DURATION_UNIT = (
    r"(?:ns|nanoseconds?|us|µs|microseconds?|ms|msecs?|milliseconds?|s|secs?|seconds?"
    r"|m|mins?|minutes?|h|hrs?|hours?|d|days?)"
)
_SIZE_UNIT = r"(?:[kmgtp]i?b|[kmgtp]|bytes?|b)"
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_ID_NAMES = (
    "request", "req", "trace", "span", "correlation", "session", "event", "run", "message",
    "msg", "call", "chatcmpl", "completion", "job", "task", "build", "container", "pod",
    "commit",
)  # fmt: skip
_ID_PREFIXES = (
    "req", "request", "evt", "event", "trace", "span", "run", "msg", "call", "chatcmpl", "cmpl",
    "sess", "job", "task", "txn", "op",
)  # fmt: skip
_COUNTERS = (
    "retry", "retries", "attempt", "try", "tries", "tick", "poll", "iteration", "iter", "epoch",
    "remaining", "elapsed", "uptime", "countdown", "seq", "sequence", "seed",
)  # fmt: skip
_BAR_CHARS = "█▉▊▋▌▍▎▏░▒▓"


def _words(words: tuple[str, ...]) -> str:
    return "(?:" + "|".join(words) + ")"


DEFAULT_RULES: tuple[VolatileRule, ...] = (
    # 2026-12-01T09:39:52.123Z, 2026-12-01 09:39:52,123 +0000
    VolatileRule(
        "iso_timestamp",
        r"\b\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?" + _ZONE,
        "<time>",
        needs_digit=True,
        triggers=(":",),
    ),
    # Tue, 01 Dec 2026 09:39:52 GMT; Tue Dec  1 09:39:52 UTC 2026; Dec  1 09:39:52 (syslog)
    VolatileRule(
        "written_timestamp",
        rf"\b(?:{_WEEKDAY},?\s+)?(?:\d{{1,2}}\s+{_MONTH}|{_MONTH}\s+\d{{1,2}}),?"
        rf"(?:\s+\d{{4}})?\s+{_CLOCK}{_ZONE}(?:\s+\d{{4}}\b)?",
        "<time>",
        needs_digit=True,
        triggers=_MONTHS,
    ),
    # 1764581992 or 1764581992123: Unix seconds or milliseconds from 2001 to 2286
    VolatileRule("epoch_time", r"(?<![\w.])1\d{9}(?:\d{3})?(?![\w.])", "<time>", needs_digit=True),
    # 2026-12-01, 2026/12/01, 01/12/2026, 1 Dec 2026
    VolatileRule(
        "date",
        rf"\b(?:\d{{4}}[-/]\d{{1,2}}[-/]\d{{1,2}}|\d{{1,2}}/\d{{1,2}}/\d{{4}}"
        rf"|\d{{1,2}}\s+{_MONTH}\s+\d{{4}})\b",
        "<date>",
        needs_digit=True,
        triggers=("-", "/", *_MONTHS),
    ),
    # 09:39:52, 09:39:52.123, 9:39 pm (a clock, not a ratio: two digits after the colon)
    VolatileRule(
        "clock_time", rf"(?<![\w:]){_CLOCK}(?![\w:])", "<time>", needs_digit=True, triggers=(":",)
    ),
    # 123e4567-e89b-12d3-a456-426614174000
    VolatileRule(
        "uuid",
        r"\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b",
        "<uuid>",
    ),
    # 0x7f3a2b1c4d00
    VolatileRule(
        "memory_address", r"\b0x[0-9a-f]{4,}\b", "<addr>", needs_digit=True, triggers=("0x",)
    ),
    # request_id=abc123, x-request-id: 9f8e..., trace-id "4bf92f...", "job_id": "evt_12ab"
    VolatileRule(
        "labelled_id",
        rf"(?P<key>\b(?:x-)?{_words(_ID_NAMES)}[-_ ]?id\b[\"']?\s*[:=]?\s*[\"']?)[\w.:-]*\d[\w.:-]*",
        r"\g<key><id>",
        needs_digit=True,
        triggers=("id",),
    ),
    # req_8f3a9c21, evt-01hzx3..., chatcmpl-abc123xyz, call_x9y8z7: a prefix and a mixed id
    VolatileRule(
        "prefixed_id",
        rf"\b{_words(_ID_PREFIXES)}[-_](?=[\w-]*\d)(?=[\w-]*[a-z])[a-z0-9][\w-]{{5,}}\b",
        "<id>",
        needs_digit=True,
        triggers=("_", "-"),
    ),
    # web-6d9f7c8b5-x2kqp: a Kubernetes pod of a Deployment (its ReplicaSet's hash and a
    # random 5-character suffix, with a digit in one of them), a new name each time a pod is
    # replaced
    VolatileRule(
        "pod_name",
        r"(?P<key>\b[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)-(?=[a-z]*\d|[a-z0-9]{8,10}-[a-z]*\d)"
        r"[a-z0-9]{8,10}-[a-z0-9]{5}\b",
        r"\g<key>-<pod>",
        triggers=("-",),
    ),
    # sha256 digests, git shas (7+ hex with a digit and a letter), container ids
    VolatileRule(
        "hex_id",
        r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b",
        "<hex>",
        needs_digit=True,
    ),
    # /tmp/pytest-of-root/pytest-12/x, /var/folders/..., c:\users\me\appdata\local\temp\x
    VolatileRule(
        "temp_path",
        r"(?:/(?:private/)?(?:tmp|var/tmp|var/folders|dev/shm)/|[a-z]:\\(?:[^\\\s]+\\)*?temp\\)"
        r"[^\s\"'<>),;]*",
        "<tmp>",
        triggers=("/tmp/", "/var/", "/dev/shm/", "temp\\"),
    ),
    # 10.0.0.12:8080, 127.0.0.1, [::1]:5432
    VolatileRule(
        "ip_address",
        r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?::\d{2,5})?(?!\.?\d)"
        r"|\[(?=[0-9a-f:]*:)[0-9a-f:]+\](?::\d{2,5})?",
        "<ip>",
        needs_digit=True,
        triggers=(".", "["),
    ),
    # localhost:8080, host.docker.internal:5432, "port 8080", port=8080
    VolatileRule(
        "port",
        r"(?P<key>\blocalhost:|\b[\w-]+\.(?:local|internal|svc|cluster\.local):|\bport[\s:=]+)"
        r"\d{2,5}\b",
        r"\g<key><port>",
        needs_digit=True,
        triggers=("localhost:", "local:", "internal:", "svc:", "port"),
    ),
    # pid 4242, pid=4242, (pid: 4242), process 4242, worker[4242]
    VolatileRule(
        "pid",
        r"(?P<key>\b(?:pid|process|thread|tid)\b[\s:=#]*|\b[a-z][\w-]*\[)\d{2,7}(?P<end>\]?)",
        r"\g<key><pid>\g<end>",
        needs_digit=True,
        triggers=("pid", "process", "thread", "tid", "["),
    ),
    # 12.3 kb/s, 1.2m/s, 300 req/s
    VolatileRule(
        "rate",
        rf"\b{_NUMBER}\s?(?:{_SIZE_UNIT}|req|reqs|requests|ops|it|items|tokens)/s(?:ec)?\b",
        "<rate>",
        needs_digit=True,
        triggers=("/s",),
    ),
    # in 0.53s, 12ms, 1m30s, 2 minutes, 1.2 sec, age 5d (a bare m is minutes, even in 1.2M)
    VolatileRule(
        "duration",
        rf"\b{_NUMBER}\s?{_DURATION_UNIT}(?:\s?{_NUMBER}\s?{_DURATION_UNIT})*\b",
        "<duration>",
        needs_digit=True,
    ),
    # 1.2 mb, 512kib, 1024 bytes, 340k, 2g
    VolatileRule(
        "size",
        rf"\b{_NUMBER}\s?(?:[kmgtp]i?b|bytes|[kgtp]\b)",
        "<size>",
        needs_digit=True,
    ),
    # 45%, 45.2 %
    VolatileRule("percentage", rf"\b{_NUMBER}\s?%", "<pct>", needs_digit=True, triggers=("%",)),
    # [=====>    ], |█████▌   |, ##########
    VolatileRule(
        "progress_bar",
        rf"\[[=#>\-. ]{{3,}}\]|\|[{_BAR_CHARS}#= ]{{3,}}\||[{_BAR_CHARS}#]{{4,}}",
        "<bar>",
        triggers=("[", "|", "#", *_BAR_CHARS),
    ),
    # a meter's count in brackets: [3/10], ( 12/100)
    VolatileRule(
        "meter_count",
        r"(?<=[\[(])\s*\d+\s?/\s?\d+\s*(?=[\])])",
        "<n>/<n>",
        needs_digit=True,
        triggers=("/",),
    ),
    # 1532 tokens, tokens: 1532
    VolatileRule(
        "token_count",
        r"\b\d+(?P<unit>\s(?:prompt |completion |input |output )?tokens?)\b"
        r"|(?P<key>\btokens?\b\s*[:=]\s*)\d+",
        r"\g<key><n>\g<unit>",
        needs_digit=True,
        triggers=("token",),
    ),
    # retry 3, attempt #4, poll 12, remaining 42, uptime 311, seed 787350303: a countdown, a
    # tick counter or a random seed
    VolatileRule(
        "counter",
        rf"(?P<key>\b{_words(_COUNTERS)}\b\s*[#:=]?\s*)\d+",
        r"\g<key><n>",
        needs_digit=True,
        triggers=(
            "ret",
            "att",
            "tr",
            "tick",
            "poll",
            "iter",
            "epoch",
            "remain",
            "elapsed",
            "uptime",
            "countdown",
            "seq",
            "seed",
        ),
    ),
)
"""The default rules, in the order they run. `docs/monitor.md` lists them with examples."""
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
    ("bar", _BAR_CHARS, ""),
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


_METER = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)\s?%|(?<![\w.,/])(\d[\d,]*)\s?/\s?(\d[\d,]*)(?![\w.,/])"
)


def meter_readings(text: str) -> tuple[float, ...]:
    """The progress meters of a text, in order: each percentage (`45%`) and each count of a
    total (`101,344/375,350`, `3/10`) as a fraction of its whole.

    The volatile rules hide these values from the keys; read before them, a meter that moved
    forward between two outputs of the same call is progress (`TrapMonitor` uses it when the
    caller gives no progress label)."""
    values: list[float] = []
    for match in _METER.finditer(text):
        percent, done, total = match.groups()
        if percent is not None:
            values.append(float(percent) / 100.0)
            continue
        whole = float(total.replace(",", ""))
        if whole > 0:
            values.append(float(done.replace(",", "")) / whole)
    return tuple(values)


def meter_advanced(before: tuple[float, ...], after: tuple[float, ...]) -> bool:
    """The same meters, none gone back and at least one gone forward."""
    if not before or len(before) != len(after):
        return False
    return all(b <= a for b, a in zip(before, after, strict=True)) and before != after
