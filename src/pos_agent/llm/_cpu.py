"""What this CPU offers, and what the loaded llama.cpp library was compiled to use.

llama-cpp-python builds llama.cpp from source. Built for the build host's CPU (`GGML_NATIVE`),
the library may use instructions another machine lacks (SIGILL), and on Xeons with AMX ggml's
AMX matrix multiply crashed (SIGSEGV) as soon as a prompt batch held more than one token. The
project builds a portable x86-64-v3 library (pyproject.toml); these helpers let the runtime and
`pos doctor` check what is actually loaded (`_prompt_batch.py` runs the path that crashed).
"""

from __future__ import annotations

import platform
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

# ggml's compile-time CPU features and the /proc/cpuinfo flag each one needs.
GGML_FEATURE_FLAGS: Mapping[str, str] = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX_VNNI": "avx_vnni",
    "AVX2": "avx2",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
}
# The flags worth showing in `pos doctor`: what the portable build needs, and what crashed.
REPORTED_FLAGS = ("avx2", "fma", "f16c", "bmi2", "avx512f", "amx_tile", "amx_int8", "amx_bf16")
# What the project's portable build (x86-64-v3) needs from the CPU.
PORTABLE_BUILD_NEEDS = ("avx", "avx2", "fma", "f16c", "bmi2")
REBUILD = (
    "rebuild llama-cpp-python portably: `uv sync --frozen --all-extras --reinstall-package "
    "llama-cpp-python` (the project's pyproject.toml sets the portable flags; a plain "
    "`pip install llama-cpp-python` builds for the build machine's CPU)"
)


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """The CPU's feature flags, or None where /proc/cpuinfo cannot tell (not Linux)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return None


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or platform.machine()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return value.strip()
    return platform.machine()


def parse_system_info(info: str) -> dict[str, str]:
    """`llama_print_system_info()` text ("CPU : SSE3 = 1 | AVX = 1 | ...") as a dict."""
    features: dict[str, str] = {}
    for part in info.replace("\n", "|").split("|"):
        name, equals, value = part.rpartition("=")
        if not equals:
            continue
        key = name.split(":")[-1].strip()
        if key:
            features[key] = value.strip()
    return features


@lru_cache(maxsize=1)
def llama_features() -> dict[str, str]:
    """The features the loaded llama.cpp library was compiled with (empty if not loadable)."""
    try:
        import llama_cpp
    except Exception:
        return {}
    try:
        raw = llama_cpp.llama_print_system_info()
    except Exception:
        return {}
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return parse_system_info(text)


def compiled_cpu_features(features: Mapping[str, str]) -> list[str]:
    """The CPU instruction sets the library was compiled to use."""
    return [name for name in GGML_FEATURE_FLAGS if features.get(name) == "1"]


def missing_cpu_features(features: Mapping[str, str], flags: frozenset[str] | None) -> list[str]:
    """Compiled-in instruction sets this CPU lacks (running the library would die of SIGILL)."""
    if flags is None:
        return []
    return [
        name for name in compiled_cpu_features(features) if GGML_FEATURE_FLAGS[name] not in flags
    ]


def uses_amx(features: Mapping[str, str]) -> bool:
    return features.get("AMX_INT8") == "1"


@contextmanager
def amx_buffers_off(active: bool) -> Iterator[None]:
    """While loading a model, keep ggml off its extra buffer types when `active`.

    The AMX matmul is reached through an "extra" buffer type (weight repacking); with
    `use_extra_bufts = False` the model's weights stay in plain CPU buffers, which is the path
    that works. llama-cpp-python has no argument for it, so the defaults it asks llama.cpp for
    are adjusted for the duration of the load.
    """
    if not active:
        yield
        return
    import llama_cpp.llama_cpp as bindings

    original = bindings.llama_model_default_params

    def without_extra_buffers() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    bindings.llama_model_default_params = without_extra_buffers
    try:
        yield
    finally:
        bindings.llama_model_default_params = original
