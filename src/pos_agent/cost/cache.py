"""Provider prompt-cache rules, and the estimate of cached prompt tokens where a server says
nothing.

A provider bills the part of a prompt it serves from its prompt cache at a fraction of the
input price. What can be served is a prefix the prompt shares with an earlier one, under rules
that differ by provider (the rule parameters are those the providers document; each can be
changed in a price table, `cost/prices.py`):

    openai               automatic; a prefix counts from 1,024 tokens, in blocks of 128
    anthropic            only up to an explicit `cache_control` breakpoint (at most 4), a
                         cached block at least 1,024 tokens; reads 0.1x, writes 1.25x (5 min)
    dashscope            implicit (automatic) cache, from 256 tokens; hits at 20% of the price
    dashscope-explicit   breakpoints as Anthropic's, blocks of at least 1,024 tokens; hits at
                         10%, creation at 125%
    llamacpp             the server keeps the last request's KV state, its prompt then its
                         answer: any prefix shared with that state is reused, and a prompt
                         held whole still has its last token evaluated again
    llamacpp-ram         llama-cpp-python's server with `--cache`: the states (prompt + answer)
                         of earlier requests too
    none                 nothing is cached

The estimate (`PrefixCache`) is by tokens: the characters a prompt shares with the longest
matching earlier prompt of the same session, converted with the prompt's own tokens per
character, then cut to the rule's minimum and block size. It is an estimate, and is always
recorded as one (`cache_source: estimated:<rule>`); a server's own count wins when it sends one.
It is only right on the requests as the server got them, in order: the answer's schema written
into the system message where the server has no native schema mode, and every repair turn
(`Completion.sent`); and, for the llamacpp rules, with each answer kept in the server's state
(measured on llama-cpp-python's server by `perf.cost --server`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ANSWER_MARK",
    "CACHE_RULES",
    "CacheEstimate",
    "CacheRule",
    "PrefixCache",
    "cache_rule",
    "prompt_breakpoints",
    "prompt_text",
    "shared_prefix",
]


@dataclass(frozen=True)
class CacheRule:
    """How one provider serves prompt prefixes from its cache."""

    name: str
    min_tokens: int = 0
    """A shared prefix shorter than this is not cached at all."""
    block_tokens: int = 1
    """Cached tokens come in multiples of this."""
    breakpoints: bool = False
    """Only prefixes that end at an explicit cache breakpoint are cached (and written)."""
    last_prompt_only: bool = False
    """The cache holds only the previous prompt (a single KV state), not every earlier one."""
    kv_state: bool = False
    """A server's KV state (llama.cpp): what it keeps of a request is its prompt followed by
    its answer, and a prompt it holds whole still has its last token evaluated again."""
    enabled: bool = True

    def cached(self, shared_tokens: int, prompt_tokens: int) -> int:
        """Tokens served from the cache for a prefix of `shared_tokens` already seen."""
        shared = min(shared_tokens, prompt_tokens)
        if not self.enabled or shared < max(1, self.min_tokens):
            return 0
        return shared - shared % max(1, self.block_tokens)


CACHE_RULES: dict[str, CacheRule] = {
    rule.name: rule
    for rule in (
        CacheRule("openai", min_tokens=1024, block_tokens=128),
        CacheRule("anthropic", min_tokens=1024, breakpoints=True),
        CacheRule("dashscope", min_tokens=256),
        CacheRule("dashscope-explicit", min_tokens=1024, breakpoints=True),
        CacheRule("llamacpp", last_prompt_only=True, kv_state=True),
        CacheRule("llamacpp-ram", kv_state=True),
        CacheRule("none", enabled=False),
    )
}


def cache_rule(name: str) -> CacheRule:
    """The rule called `name`; a clear error naming the rules there are."""
    try:
        return CACHE_RULES[name]
    except KeyError:
        raise ValueError(
            f"unknown cache rule {name!r}; use one of {', '.join(CACHE_RULES)}"
        ) from None


ANSWER_MARK = "<|assistant|>"
"""What comes before an answer in a kept state (`prompt_text`'s mark of an assistant turn)."""


def prompt_text(contents: Sequence[tuple[str, str]]) -> str:
    """The prompt as a server's prefix cache sees it: the messages in order, each with its
    role (a change of role or of the boundary between two messages breaks the prefix)."""
    return "".join(f"<|{role}|>{content}<|end|>" for role, content in contents)


def prompt_breakpoints(
    contents: Sequence[tuple[str, str]], breakpoints: Sequence[Sequence[int]]
) -> list[int]:
    """The messages' breakpoints (`breakpoints[i]`: offsets in message i's content) as
    offsets in `prompt_text(contents)`: a breakpoint ends the prefix before it."""
    offsets: list[int] = []
    start = 0
    for (role, content), marks in zip(contents, breakpoints, strict=True):
        head = start + len(f"<|{role}|>")
        offsets.extend(head + mark for mark in marks if 0 < mark <= len(content))
        start = head + len(content) + len("<|end|>")
    return offsets


def shared_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of `a` and `b` (binary search on slices, which
    compares in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class CacheEstimate:
    """The estimate for one prompt."""

    shared_tokens: int
    """Tokens of the longest prefix seen before (before the rule's minimum and blocks)."""
    cached_tokens: int
    """What the rule serves from the cache."""
    write_tokens: int
    """What the rule writes to the cache at this call (breakpoint rules only)."""


class PrefixCache:
    """The earlier prompts of one session (an episode), for the estimate of what a provider's
    prefix cache would serve. Holds the prompts in memory only; nothing is written anywhere."""

    def __init__(self, rule: CacheRule, *, keep: int = 256) -> None:
        self.rule = rule
        self.seen: deque[str] = deque(maxlen=1 if rule.last_prompt_only else keep)
        self.written: deque[str] = deque(maxlen=keep)
        """Breakpoint rules: the prefixes written to the cache so far."""

    def estimate(
        self,
        text: str,
        prompt_tokens: int,
        *,
        breakpoints: Sequence[int] = (),
        answer: str | None = None,
    ) -> CacheEstimate:
        """What the cache would serve of `text` (`prompt_tokens` long), then remember it.
        `breakpoints` are character offsets of the prompt's explicit cache breakpoints;
        `answer`, the reply to it, which a KV-state rule keeps after the prompt (None: not
        known, the prompt alone is kept)."""
        per_char = prompt_tokens / len(text) if text else 0.0
        if self.rule.breakpoints:
            return self._at_breakpoints(text, prompt_tokens, per_char, breakpoints)
        chars = max((shared_prefix(text, earlier) for earlier in self.seen), default=0)
        kept = text
        if self.rule.kv_state and answer is not None:
            kept = f"{text}{ANSWER_MARK}{answer}"
        self.seen.append(kept)
        if self.rule.kv_state and text and chars >= len(text):
            shared = max(0, prompt_tokens - 1)
        else:
            shared = int(chars * per_char)
        return CacheEstimate(shared, self.rule.cached(shared, prompt_tokens), 0)

    def _at_breakpoints(
        self, text: str, prompt_tokens: int, per_char: float, breakpoints: Sequence[int]
    ) -> CacheEstimate:
        marks = sorted({b for b in breakpoints if 0 < b <= len(text)})[-4:]
        hit = 0
        for mark in marks:
            if any(len(w) == mark and text.startswith(w) for w in self.written):
                hit = mark
        cached = self.rule.cached(int(hit * per_char), prompt_tokens)
        write = 0
        if marks and marks[-1] > hit:
            block = int(marks[-1] * per_char)
            if block >= self.rule.min_tokens:
                write = block - cached
                self.written.extend(text[:m] for m in marks if m > hit)
        return CacheEstimate(int(hit * per_char), cached, write)
