"""What each method would be billed: tokens, the share a provider's prompt cache could serve,
billed tokens, and PoS against Raw, on the same scripted episodes.

    python -m benchmarks.cost [--steps 50] [--episodes alfworld,rca,loca]
                                  [--methods raw,acon,pace,hiagent,lh,pos]
                                  [--server] [--server-steps 4]

Episodes (every method sees the same one; only the backbone is scripted, the agents, prompts
and schemas are the harness's own, as `pos run` builds them):

- alfworld: the real alfworld-mini `heat-mug` environment, the scripted walk of
  `perf.prompt_growth` (round robin of go to / examine / open, never finishing), `--steps` long;
- rca: one rca-nezha case (nz-tt-010) recorded once with `perf.baselines`' round robin of query
  tools and replayed to every method, `--steps` long;
- loca: one LOCA-Bench 8K case (WoocommerceStockAlert, seed 42) recorded once with read-only
  tool calls and replayed the same way (skipped, and said so, when LOCA's runtime is missing).

For each call the prompt as sent (the messages, in order) is compared with the earlier prompts
of the episode (`cost/cache.py`): the tokens it shares with the longest matching one, cut to
each provider's rule, are what that provider could serve from its cache. Tokens are the
scripted backend's estimate (four characters a token). Billed tokens = uncached prompt tokens +
cached ones at the cached price (a fraction of the input price) + completion tokens (at the
input price). Before the last two lines, per episode, the floor: the billed pos/raw if every
PoS prompt token were served from the cache and raw's stayed as measured, and with raw's all
cached too (what no layout of the same content can beat).

With `--server` the alfworld episode of raw and pos is run once more, shorter, against
llama-cpp-python's OpenAI-compatible server (the embedded SmolLM2 model, `--cache` on: the
server keeps the state of every request, its prompt then its answer, and starts a prompt from
the one sharing the longest prefix). Every request that reaches the server is recorded as sent
(`SentLog`: the answer's schema in the system message, as this server has no native schema
mode, and the repair turns, which `Calls` does not see), with the prompt tokens the server
itself reported reusing for it (its log's "prefix-match hit"). The estimate applies the
server's rule to those requests by characters, with the server's own prompt token counts; it
is printed next to the same rule on `Calls` (what `Model.answer` sees) and on the server's own
tokens (the model's chat template and tokenizer).

The last two lines, under OpenAI's rule:
`billed pos/raw at 0.5x cached: alfworld=<a> rca=<b> loca=<c>` and the same at 0.1x.
"""

from benchmarks.cost.episodes import (
    EPISODES,
    METHODS,
    Call,
    Calls,
    cached_tokens,
    counts,
    estimates,
    play,
    run_episode,
)
from benchmarks.cost.report import all_cached, floor, floor_lines, main, ratio
from benchmarks.cost.server import (
    Sent,
    SentLog,
    Tokens,
    sent_estimate,
    server_reuse,
    server_run,
    server_table,
    tokenized_reuse,
)

__all__ = [
    "EPISODES",
    "METHODS",
    "Call",
    "Calls",
    "Sent",
    "SentLog",
    "Tokens",
    "all_cached",
    "cached_tokens",
    "counts",
    "estimates",
    "floor",
    "floor_lines",
    "main",
    "play",
    "ratio",
    "run_episode",
    "sent_estimate",
    "server_reuse",
    "server_run",
    "server_table",
    "tokenized_reuse",
]
