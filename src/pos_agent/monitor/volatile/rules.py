"""The volatile rules: what a volatile token looks like (`VolatileRule`) and the default list,
in the order the rules run (more specific shapes first)."""

from __future__ import annotations

import re
from dataclasses import dataclass


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
BAR_CHARS = "█▉▊▋▌▍▎▏░▒▓"


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
    # in 0.53s, 12ms, 1m30s, 2 minutes, 1.2 sec, age 5d (a bare m is minutes, even in 1.2M);
    # not a quoted address such as sed's '117d' or '10,20d' (a line, not a time)
    VolatileRule(
        "duration",
        rf"\b(?<![',]){_NUMBER}\s?{_DURATION_UNIT}(?:\s?{_NUMBER}\s?{_DURATION_UNIT})*\b",
        "<duration>",
        needs_digit=True,
    ),
    # 1.2 mb, 512kib, 1024 bytes, 340k, 2g (not sed's '10,20p': a bare p is no size)
    VolatileRule(
        "size",
        rf"\b(?<![',]){_NUMBER}\s?(?:[kmgtp]i?b|bytes|[kgt]\b)",
        "<size>",
        needs_digit=True,
    ),
    # 45%, 45.2 %
    VolatileRule("percentage", rf"\b{_NUMBER}\s?%", "<pct>", needs_digit=True, triggers=("%",)),
    # [=====>    ], |█████▌   |, ##########
    VolatileRule(
        "progress_bar",
        rf"\[[=#>\-. ]{{3,}}\]|\|[{BAR_CHARS}#= ]{{3,}}\||[{BAR_CHARS}#]{{4,}}",
        "<bar>",
        triggers=("[", "|", "#", *BAR_CHARS),
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
