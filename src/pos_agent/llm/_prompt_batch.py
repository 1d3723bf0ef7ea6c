"""The prompt-batch probe: a multi-token prompt through a local GGUF model, the path that crashed
llama.cpp on AMX Xeons (SIGSEGV in ggml's AMX matmul). `pos doctor` runs it in a child process
(`python -m pos_agent.llm._prompt_batch [PATH]`) so that a crash is reported, not suffered.

It loads the model the way the local backend does (`_local.py`, with the CPU checks of
`_cpu.py`), so it sits above both.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from pos_agent.llm._local import LlamaCppBackend, embedded_gguf_path

PROBE_PROMPT_WORDS = 200  # a few hundred tokens: one multi-token batch through ggml's matmul


def probe_prompt_batch(path: Path | None = None, threads: int | None = None) -> dict[str, Any]:
    """Evaluate a multi-token prompt with a local GGUF model (the embedded one by default).

    Returns prompt tokens, seconds and tokens per second. Run it in a child process when a
    crash must not take the caller down (`pos doctor` does).
    """
    backend = LlamaCppBackend(
        path or embedded_gguf_path(), n_ctx=2048, n_threads=threads or os.cpu_count() or 1
    )
    llama = backend.llama
    tokens = llama.tokenize(
        ("The belief holds what the agent knows. " * PROBE_PROMPT_WORDS).encode()
    )
    tokens = tokens[:1024]
    llama.reset()
    started = time.perf_counter()
    llama.eval(tokens)
    seconds = time.perf_counter() - started
    return {
        "prompt_tokens": len(tokens),
        "seconds": round(seconds, 3),
        "tokens_per_s": round(len(tokens) / seconds, 1) if seconds > 0 else None,
    }


if __name__ == "__main__":
    given = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    sys.stdout.write(json.dumps(probe_prompt_batch(given)) + "\n")
