"""`pos_agent.monitor.volatile`: each default rule on its own, in the order they run, and
extension by the caller."""

from __future__ import annotations

import re

import pytest

from pos_agent.monitor import TrapMonitor
from pos_agent.monitor.volatile import DEFAULT_RULES, Normaliser, VolatileRule, normalise

RULES = {rule.name: rule for rule in DEFAULT_RULES}

# rule name -> [(text, what that rule alone makes of it)], and texts it must leave alone.
POSITIVE: dict[str, list[tuple[str, str]]] = {
    "iso_timestamp": [
        ("at 2026-12-01T09:39:52.123Z done", "at <time> done"),
        ("2026-12-01 09:39:52,123 +0000 INFO", "<time> INFO"),
    ],
    "written_timestamp": [
        ("Date: Tue, 01 Dec 2026 09:39:52 GMT", "Date: <time>"),
        ("Tue Dec  1 09:39:52 UTC 2026 built", "<time> built"),
        ("Dec  1 09:39:52 host sshd", "<time> host sshd"),
    ],
    "epoch_time": [("ts=1764581992 ok", "ts=<time> ok"), ("at 1764581992123", "at <time>")],
    "date": [
        ("due 2026-12-01", "due <date>"),
        ("on 01/12/2026.", "on <date>."),
        ("since 1 Dec 2026", "since <date>"),
    ],
    "clock_time": [("at 09:39:52.5 ok", "at <time> ok"), ("meet at 9:39 pm", "meet at <time>")],
    "uuid": [("id 123e4567-e89b-12d3-a456-426614174000", "id <uuid>")],
    "memory_address": [("segfault at 0x7f3a2b1c4d00", "segfault at <addr>")],
    "labelled_id": [
        ("request_id=ab12cd34 failed", "request_id=<id> failed"),
        ("X-Request-Id: 9f8e7d6c-1111", "X-Request-Id: <id>"),
        ('"trace_id": "4bf92f3577b34da6"', '"trace_id": "<id>"'),
    ],
    "prefixed_id": [("req_8f3a9c21 timed out", "<id> timed out"), ("call_x9Y8z7w6", "<id>")],
    "pod_name": [
        ("web-6d9f7c8b5-x2kqp   0/1   Error", "web-<pod>   0/1   Error"),
        ("pod/api-server-7c9f8d6b4d-qz8xw restarted", "pod/api-server-<pod> restarted"),
    ],
    "hex_id": [
        ("commit 3f2a9c1 fixed", "commit <hex> fixed"),
        ("sha256:e3b0c44298fc", "sha256:<hex>"),
    ],
    "temp_path": [
        ("wrote /tmp/pytest-of-root/pytest-12/out.txt ok", "wrote <tmp> ok"),
        (r"saved C:\Users\me\AppData\Local\Temp\tmpab12.txt", "saved <tmp>"),
    ],
    "ip_address": [
        ("listening on 10.0.0.12:8080", "listening on <ip>"),
        ("[::1]:5432 up", "<ip> up"),
    ],
    "port": [
        ("at localhost:5173 ready", "at localhost:<port> ready"),
        ("port 8080 busy", "port <port> busy"),
    ],
    "pid": [
        ("worker pid 4242 exited", "worker pid <pid> exited"),
        ("sshd[4242]: ok", "sshd[<pid>]: ok"),
    ],
    "rate": [("  12.3 kB/s", "  <rate>"), ("300 req/s", "<rate>")],
    "duration": [
        ("3 failed, 7 passed in 0.53s", "3 failed, 7 passed in <duration>"),
        ("took 1m30s", "took <duration>"),
        ("after 2 minutes", "after <duration>"),
    ],
    "size": [
        ("downloaded 1.2 MB", "downloaded <size>"),
        ("1024 bytes read", "<size> read"),
        ("100 340k 0", "100 <size> 0"),
        ("a 2G file", "a <size> file"),
    ],
    "percentage": [("progress 45%", "progress <pct>"), ("cpu 45.2 %", "cpu <pct>")],
    "progress_bar": [("[=====>    ] go", "<bar> go"), ("|█████▌   | 3", "<bar> 3")],
    "meter_count": [("[ 3/10] test_a", "[<n>/<n>] test_a"), ("(12/100)", "(<n>/<n>)")],
    "token_count": [
        ("used 1532 tokens", "used <n> tokens"),
        ("tokens: 88 left", "tokens: <n> left"),
    ],
    "counter": [
        ("retry 3 of 5", "retry <n> of 5"),
        ("attempt #4 failed", "attempt #<n> failed"),
        ("plugins: randomly (seed 787350303)", "plugins: randomly (seed <n>)"),
    ],
}
NEGATIVE: dict[str, list[str]] = {
    "iso_timestamp": ["version 2026.12.1", "2026-12-01 is a date only"],
    "written_timestamp": ["May I come in at noon?", "March on"],
    "epoch_time": ["pid 42", "1.764581992", "12345"],
    "pod_name": ["my-long-project-name", "python-dateutil-2-8", "install-packages-fresh"],
    "date": ["3/10 passed", "2026 was long"],
    "clock_time": ["ratio 3:1", "file.py:12:4", "a:bc"],
    "uuid": ["not-a-uuid-here", "12345678"],
    "memory_address": ["0x1", "hex 7f3a"],
    "labelled_id": ["request failed", "the run id is missing"],
    "prefixed_id": ["run_tests passed", "job_status"],
    "hex_id": ["deadbeef", "added face", "12345678", "abc"],
    "temp_path": ["/usr/bin/python", "src/tmp_utils.py"],
    "ip_address": ["version 1.2.3", "1.2.3.4.5.6 is not"],
    "port": ["import port", "transport 42"],
    "pid": ["process ended", "array[i]"],
    "rate": ["3 files/dir", "speed unknown"],
    "duration": ["3 failed, 7 passed", "line 42", "exit 1", "5 items", "1.2g read"],
    "size": ["5 kilos", "2 b or not", "ran 5m ago"],
    "percentage": ["100 percent", "a % b"],
    "progress_bar": ["[ok]", "a | b | c", "## heading"],
    "meter_count": ["3/10 passed", "src/a/1"],
    "token_count": ["tokenizer 3", "the token is 42x"],
    "counter": ["retry later", "page 2", "line 42", "seeds 3"],
}
CASES = [(name, text, expected) for name, pairs in POSITIVE.items() for text, expected in pairs]
NON_CASES = [(name, text) for name, texts in NEGATIVE.items() for text in texts]


def test_every_default_rule_has_cases() -> None:
    assert set(POSITIVE) == set(RULES) == set(NEGATIVE)


@pytest.mark.parametrize(("name", "text", "expected"), CASES)
def test_a_rule_replaces_what_it_names(name: str, text: str, expected: str) -> None:
    # Rules match lower-cased text: keys ignore case.
    assert Normaliser([RULES[name]])(text) == expected.lower()


@pytest.mark.parametrize(("name", "text"), NON_CASES)
def test_a_rule_leaves_other_text_alone(name: str, text: str) -> None:
    assert Normaliser([RULES[name]])(text) == text.lower()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "curl: (7) Failed to connect at 2026-12-01T09:39:52Z request_id=ab12 (took 0.53s)",
            "curl: (7) Failed to connect at <time> request_id=<id> (took <duration>)",
        ),
        ("===== 3 failed, 7 passed in 0.53s =====", "===== 3 failed, 7 passed in <duration> ====="),
        ("  % Total 100 1.2G 45% 12.3k/s 0:00:03", "  % Total 100 <size> <pct> <rate> <time>"),
        ("page 2 of results, line 42, exit code 1", "page 2 of results, line 42, exit code 1"),
    ],
)
def test_the_rules_in_their_order(text: str, expected: str) -> None:
    assert normalise(text) == expected.lower()


def test_outputs_that_differ_only_in_volatile_tokens_normalise_to_one_text() -> None:
    first = "GET /health 502 at 2026-12-01T09:39:52Z (req_8f3a9c21, 12ms, pid 4242)"
    second = "GET /health 502 at 2026-12-01T09:41:07Z (req_0b77aa1e, 9ms, pid 4251)"
    assert normalise(first) == normalise(second)
    assert normalise("GET /health 200") != normalise("GET /health 502")


def test_a_caller_adds_a_rule_that_runs_after_the_defaults() -> None:
    build = VolatileRule("build_number", r"\bbuild #\d+", "build #<n>", needs_digit=True)
    extended = Normaliser(extra=[build])
    assert extended("Build #1234 at 09:39:52 failed") == "build #<n> at <time> failed"
    assert normalise("Build #1234 failed") == "build #1234 failed"
    assert extended.rules[-1] is build and extended.rules[:-1] == DEFAULT_RULES


def test_a_caller_rule_reaches_the_monitor() -> None:
    seed = VolatileRule("seed", r"seed=\w+", "seed=<seed>")
    plain, extended = TrapMonitor(), TrapMonitor(volatile=[seed])
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    for word in words:
        free = plain.observe("run", f"Failed with seed={word}.")
        caught = extended.observe("run", f"Failed with seed={word}.")
    assert not free.trapped  # each seed is a first-seen word
    assert caught.trapped and caught.pattern == "static"


def test_novelty_counts_only_what_is_left() -> None:
    monitor = TrapMonitor()
    first = monitor.observe(
        "curl", "Error 502 at 2026-12-01T09:39:52Z id 123e4567-e89b-12d3-a456-426614174000"
    )
    second = monitor.observe(
        "curl", "Error 502 at 2026-12-01T09:40:01Z id 9b2e4567-e89b-12d3-a456-426614174999"
    )
    assert first.novel > 0 and second.novel == 0


def test_the_start_guard_changes_no_match() -> None:
    """The default rules run behind a guard on where a match can start; every case of every
    rule, alone and all joined, normalises as the unguarded joined pattern does."""
    guarded = Normaliser()
    texts = [text for _, text, _ in CASES] + [text for _, text in NON_CASES]
    texts.append(" ".join(texts))
    for text in texts:
        expected = text.lower()
        plain = re.compile("|".join(guarded._parts))
        expected = plain.sub(guarded._replace, expected)
        assert guarded(text) == expected, text


# The scan as it was before the rules were dispatched on the character where a match starts:
# one guard on where any default rule can start, then every rule the text's digits and
# triggers let in, in list order.
_SINGLE_GUARD = r"(?=\b|[\[|/#(█▉▊▋▌▍▎▏░▒▓])|(?<=[\[(])"


_SCANS: dict[tuple[int, tuple[int, ...]], re.Pattern[str]] = {}


def _single_guard_scan(normaliser: Normaliser, text: str) -> str:
    lowered = text.lower()
    digits = re.search(r"\d", lowered) is not None
    active = [
        i
        for i, rule in enumerate(normaliser.rules)
        if (digits or not rule.needs_digit)
        and (not rule.triggers or any(t in lowered for t in rule.triggers))
    ]
    if not active:
        return lowered
    lead = 0
    while lead < len(active) and normaliser.rules[active[lead]] in DEFAULT_RULES:
        lead += 1
    guarded = "|".join(normaliser._parts[i] for i in active[:lead])
    rest = [normaliser._parts[i] for i in active[lead:]]
    pattern = re.compile(
        "|".join(([f"(?:{_SINGLE_GUARD})(?:{guarded})"] if guarded else []) + rest)
    )

    def expand(match: re.Match[str]) -> str:
        template = normaliser._templates[match.lastgroup or ""]
        return match.expand(template) if "\\" in template else template

    return pattern.sub(expand, lowered)


def _mixed_texts(count: int, seed: int) -> list[str]:
    """Texts made of the rules' cases and of characters where matches start or stop."""
    import random

    rng = random.Random(seed)
    pieces = [text for _, text, _ in CASES] + [text for _, text in NON_CASES]
    pieces += [
        "-", "--", "a-", "[", "(", "( 3/10)", "[-", "[ 12/100]", "|", "#", "/", "/tmp/x", "é",
        "_id", "x-", "é-web.local:80", "_svc.svc:443", "٣", "0x", "1764581992", "12:30",
        "\n", "  ", ".", ":", "█▌", "tokens", "retry", "pid", "sshd[42]", "c:\\temp\\f",
        "xc:\\users\\temp\\f", "Dec", "2026", "a1b2c3d4", "-9f8e", "=", "12 dec 09:39:52",
        "a23e4567-e89b-12d3-a456-426614174000", "9web-6d9f7c8b5-x2kqp", "1node.local:80",
        "12ms-web.local:8080", "0.5s-a.svc:80", "0.5s-.svc:80", "####", "██▌░", "#█", "build #12",
        "node-7", "node7",
    ]  # fmt: skip
    texts = []
    for _ in range(count):
        parts = rng.choices(pieces, k=rng.randint(1, 6))
        joints = rng.choices(["", " ", "-", "[", "(", ":", "/", "_", "="], k=len(parts))
        texts.append("".join(j + p for j, p in zip(joints, parts, strict=True)))
    return texts


@pytest.mark.parametrize(
    "normaliser",
    [
        Normaliser(),
        Normaliser(extra=[VolatileRule("build", r"\bbuild #\d+", "build #<n>", needs_digit=True)]),
        # a caller's rule first: the defaults after it are tried everywhere, as before
        Normaliser([VolatileRule("word", r"-web", "-<web>"), *DEFAULT_RULES]),
        # placeholders with escapes or references `Match.expand` alone reads
        Normaliser(
            extra=[
                VolatileRule("tab", r"(?P<k>\bbuild) #(?P<n>\d+)", r"\g<k>\t#<n>"),
                VolatileRule(
                    "optional", r"(?P<k>\bnode)(?P<dash>-)?(?P<n>\d+)", r"\g<k>\g<dash><n>"
                ),
            ]
        ),
        Normaliser([RULES["port"], RULES["pid"], RULES["progress_bar"], RULES["meter_count"]]),
    ],
    ids=["defaults", "extra", "caller-first", "escapes", "some"],
)
def test_the_dispatch_on_start_characters_matches_the_single_guard_scan(
    normaliser: Normaliser,
) -> None:
    """Dispatching the default rules on the character where a match starts, and expanding
    placeholders without `Match.expand` (speed-ups), make every text what the earlier
    single-guard scan with `Match.expand` made of it."""
    texts = [text for _, text, _ in CASES] + [text for _, text in NON_CASES]
    for text in texts + _mixed_texts(600, seed=5):
        assert normaliser(text) == _single_guard_scan(normaliser, text), text
