"""The embedded model runs on every x86-64 CPU with AVX2: a portable llama.cpp, checked at run
time against the CPU, and the multi-token prompt path that crashed on AMX Xeons."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

import pos_agent.cli.doctor as doctor
from extras import needs_local_model
from pos_agent.llm import _cpu
from pos_agent.llm._cpu import (
    cpu_flags,
    missing_cpu_features,
    parse_system_info,
    uses_amx,
)
from pos_agent.llm._prompt_batch import probe_prompt_batch

NATIVE_AMX_INFO = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
    "BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | "
    "AMX_INT8 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
)
HASWELL_FLAGS = frozenset(["fpu", "sse2", "pni", "ssse3", "avx", "avx2", "fma", "f16c", "bmi2"])


def test_system_info_is_parsed_into_features() -> None:
    features = parse_system_info(NATIVE_AMX_INFO)
    assert features["AVX512"] == "1" and features["AMX_INT8"] == "1"
    assert features["SSE3"] == "1" and "CPU" not in features
    assert uses_amx(features)


def test_a_native_build_from_an_amx_host_is_refused_on_an_older_cpu() -> None:
    features = parse_system_info(NATIVE_AMX_INFO)
    missing = missing_cpu_features(features, HASWELL_FLAGS)
    assert missing == [
        "AVX_VNNI",
        "AVX512",
        "AVX512_VBMI",
        "AVX512_VNNI",
        "AVX512_BF16",
        "AMX_INT8",
    ]
    portable = parse_system_info(
        "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1"
    )
    assert missing_cpu_features(portable, HASWELL_FLAGS) == []
    assert missing_cpu_features(features, None) == []  # unknown CPU: nothing to claim


def test_cpu_flags_come_from_the_first_flags_line(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu avx2 amx_tile\n")
    assert cpu_flags(info) == frozenset({"fpu", "avx2", "amx_tile"})
    assert _cpu.cpu_model(info) == "Test CPU"
    assert cpu_flags(tmp_path / "missing") is None


def test_the_amx_guard_turns_extra_buffer_types_off_only_while_loading() -> None:
    bindings = pytest.importorskip("llama_cpp.llama_cpp")
    assert bindings.llama_model_default_params().use_extra_bufts
    with _cpu.amx_buffers_off(True):
        assert not bindings.llama_model_default_params().use_extra_bufts
    assert bindings.llama_model_default_params().use_extra_bufts
    with _cpu.amx_buffers_off(False):
        assert bindings.llama_model_default_params().use_extra_bufts


def test_the_installed_llama_cpp_is_the_portable_build() -> None:
    """pyproject.toml builds x86-64-v3 without AVX-512 or AMX; a native build from the uv cache
    (or a plain pip build on an AVX-512 host) would show those features here."""
    pytest.importorskip("llama_cpp")
    features = _cpu.llama_features()
    compiled = _cpu.compiled_cpu_features(features)
    assert "AVX2" in compiled and "FMA" in compiled
    assert not {"AVX512", "AMX_INT8", "AVX512_VNNI"} & set(compiled), compiled


@needs_local_model
def test_a_multi_token_prompt_batch_runs_in_process() -> None:
    """The path that segfaulted on AMX Xeons (ggml_backend_amx_mul_mat via a batch of more than
    one token), run in this process: if it crashes here, the test run dies with it."""
    pytest.importorskip("llama_cpp")
    figures = probe_prompt_batch(threads=2)
    assert figures["prompt_tokens"] > 512  # more than one n_batch of 512
    assert figures["tokens_per_s"] and figures["tokens_per_s"] > 0


def test_doctor_reports_a_crashed_probe_instead_of_dying(monkeypatch: pytest.MonkeyPatch) -> None:
    def crashed(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args[0], -11, "", "")

    monkeypatch.setattr(doctor.subprocess, "run", crashed)
    check = doctor.check_prompt_batch()
    assert check.status == "fail" and "SIGSEGV" in check.detail and "reinstall" in check.fix


def test_doctor_reports_the_cpu() -> None:
    pytest.importorskip("llama_cpp")
    check = doctor.check_cpu()
    assert check.status == "ok", check
    assert "llama.cpp built for" in check.detail and "AVX2" in check.detail
