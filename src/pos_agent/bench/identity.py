"""What makes a case's result what it is: its settings, their hash, and the code that ran it.

A run folder holds one experiment. Its identity is every setting that can change a result:
each case's `CaseSpec` (all fields, so a field added later is covered without touching this
module) and the model options, minus the few options that only decide how results are obtained
(`OPERATIONAL_OPTIONS`: keys, retries, time-outs, cache use, threads), plus the server each of
the case's models calls, wherever it was chosen (`--base-url`, OPENAI_BASE_URL,
DASHSCOPE_BASE_URL, the backend's default). Resuming a run with other settings would mix two
experiments under one name, so the run folder refuses it and `describe_changes` says what
differs.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pos_agent.agents.methods import uses_embeddings
from pos_agent.bench.env_models import resolve_env_models
from pos_agent.envs import canonical_env, env_model_roles
from pos_agent.llm import DEFAULT_CACHE_RULE, ModelOptions, effective_server
from pos_agent.trace import redact_record

# Options that change how a result is obtained, not what it is. Everything else in
# ModelOptions (base URL, seed, context size, repair turns, schema-in-prompt, and any field added
# later) is part of a run's identity. The key is never recorded at all.
OPERATIONAL_OPTIONS = frozenset(
    {
        "api_key",
        "cache_path",
        "cache_mode",
        "timeout_s",
        "max_retries",
        "backoff_base_s",
        "backoff_cap_s",
        "n_threads",
        "context_slot",
        "endpoint_provider",  # which models take base_url: their servers are recorded below
    }
)


# Settings added after runs were recorded, left out while at their default so that the runs
# recorded before keep their settings hash (and can be resumed).
UNSET_LEFT_OUT = ("cache_breakpoints",)


def result_options(options: ModelOptions, models: Iterable[str] = ()) -> dict[str, Any]:
    """The model options that change results, JSON-ready, with credentials taken out of URLs.

    `base_url` is the server the `models` (specs) really call, wherever it was set: the option,
    an environment variable (OPENAI_BASE_URL, DASHSCOPE_BASE_URL) or the backend's default; None
    only when none of them calls a server. When they call different servers (an `openai:` and
    a `dashscope:` model without --base-url), it lists them and `servers` maps each spec to
    its own.
    """
    fields = set(type(options).model_fields)
    data = options.model_dump(mode="json", exclude=set(OPERATIONAL_OPTIONS & fields))
    for name in UNSET_LEFT_OUT:
        if data.get(name) is False:
            del data[name]
    if isinstance(data.get("base_url"), str):
        data["base_url"] = _without_credentials(data["base_url"])
    servers = model_servers(models, options)
    distinct = sorted(set(servers.values()))
    # With --base-url, the models record it unless one of them calls another server (a judge
    # of another provider, `endpoint_provider`): then every model's server is listed.
    if servers and (options.base_url is None or len(distinct) > 1):
        data["base_url"] = distinct[0] if len(distinct) == 1 else distinct
        if len(distinct) > 1:
            data["servers"] = servers
    return dict(sorted(data.items()))


def model_servers(models: Iterable[str], options: ModelOptions) -> dict[str, str]:
    """{spec: server URL} for each model spec that calls a server with these options."""
    servers = {}
    for spec in sorted(set(models)):
        server = effective_server(spec, options)
        if server is not None:
            servers[spec] = server
    return servers


def served_models(spec: Any) -> list[str]:
    """Every model spec a case may send a request to, for its identity: `called_models`, and
    PACE's embeddings endpoint when it scores relevance with one (not the offline tfidf)."""
    models = list(called_models(spec).values())
    embed = getattr(spec, "embed_model", None)
    if uses_embeddings(getattr(spec, "agent", "")) and isinstance(embed, str) and ":" in embed:
        models.append(embed)
    return models


def called_models(spec: Any) -> dict[str, str]:
    """{role: model spec} of every model a case may call: its agent's roles (policy, belief,
    Sentinel) and its environment's model roles (ClinDiag's provider and judge), offline
    options left out. An environment model that does not resolve is left for the case's
    own checks to report."""
    models = dict(spec.models()) if callable(getattr(spec, "models", None)) else {}
    env = getattr(spec, "env", None)
    requested = getattr(spec, "env_models", None)
    if env and requested:
        try:
            chosen = resolve_env_models(env, dict(requested))
            offline = env_model_roles(canonical_env(env))
        except (ValueError, KeyError):
            return models
        for role, model in chosen.items():
            if model != offline.get(role):
                models[role] = model
    return models


def spec_settings(spec: Any) -> dict[str, Any]:
    """Every field of a case spec (`bench.spec.CaseSpec`), JSON-ready; the `model` and
    `role_models` fields become `models`, the model each role really uses (none for the
    expert), so that only a model the case calls is part of its identity."""
    data = dict(redact_record(spec.model_dump()))
    if data.get("cache_rule") == DEFAULT_CACHE_RULE:
        del data["cache_rule"]  # as UNSET_LEFT_OUT: runs recorded before keep their hash
    if data.get("tag", "") is None:
        del data["tag"]  # the same: a case without a tag hashes as before tags existed
    if callable(getattr(spec, "models", None)):
        data.pop("model", None)
        data.pop("role_models", None)
        data["models"] = dict(spec.models())
    return dict(sorted(data.items()))


def settings_hash(spec: dict[str, Any], model_options: dict[str, Any]) -> str:
    """A short, stable hash of a case's settings (order of keys does not matter)."""
    text = json.dumps({"spec": spec, "model_options": model_options}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_identity(case_hashes: dict[str, str]) -> str:
    """The hash of a run: its case folders and each case's settings hash."""
    text = json.dumps(dict(sorted(case_hashes.items())))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def describe_changes(
    old_cases: dict[str, dict[str, Any]],
    new_cases: dict[str, dict[str, Any]],
    old_options: dict[str, Any],
    new_options: dict[str, Any],
    *,
    shown: int = 3,
) -> list[str]:
    """Human lines saying how two runs' settings differ: cases added or dropped, and each
    setting whose values differ (`model: local -> openai:gpt-4o`)."""
    lines = []
    added = sorted(set(new_cases) - set(old_cases))
    dropped = sorted(set(old_cases) - set(new_cases))
    if added:
        lines.append(f"{len(added)} case(s) not in the run: {_some(added, shown)}")
    if dropped:
        lines.append(f"{len(dropped)} case(s) of the run not asked for: {_some(dropped, shown)}")
    changed: dict[str, tuple[set[str], set[str]]] = {}
    for folder in sorted(set(old_cases) & set(new_cases)):
        old, new = flat_settings(old_cases[folder]), flat_settings(new_cases[folder])
        for name in sorted(set(old) | set(new)):
            if old.get(name, "-") != new.get(name, "-"):
                was, now = changed.setdefault(name, (set(), set()))
                was.add(old.get(name, "-"))
                now.add(new.get(name, "-"))
    old_flat, new_flat = flat_settings(old_options), flat_settings(new_options)
    for name in sorted(set(old_flat) | set(new_flat)):
        if old_flat.get(name, "-") != new_flat.get(name, "-"):
            changed[name] = ({old_flat.get(name, "-")}, {new_flat.get(name, "-")})
    for name, (was, now) in changed.items():
        lines.append(f"{name}: {_values(was)} -> {_values(now)}")
    return lines


def flat_settings(data: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested settings as one level, `{"a": {"b": 1}}` as `{"a.b": "1"}`, each value as JSON
    with sorted keys: two values read the same exactly when they are equal (`1` is not `"1"`,
    `null` is not `"None"`, and key order inside a value does not count). The one encoding both
    the run folder's and the report's comparisons of settings use."""
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flat_settings(value, f"{name}."))
        else:
            out[name] = json.dumps(value, sort_keys=True)
    return out


def _values(values: set[str]) -> str:
    return ", ".join(sorted(values))


def _some(items: list[str], shown: int) -> str:
    text = ", ".join(items[:shown])
    return text + (f" and {len(items) - shown} more" if len(items) > shown else "")


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


# -- provenance: which code produced a result ----------------------------------------------------


def pos_version() -> str:
    from pos_agent import __version__

    return __version__


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the checkout this package runs from (`+dirty` when tracked files are
    modified), or None when it is not a git checkout (an installed wheel) or git is missing."""
    package = Path(__file__).resolve().parents[1]
    try:
        top = _git(package, "rev-parse", "--show-toplevel")
        if top is None or (Path(top) / "src" / "pos_agent").resolve() != package:
            return None  # some other repository around an installed package
        commit = _git(package, "rev-parse", "HEAD")
        dirty = _git(package, "status", "--porcelain", "--untracked-files=no")
    except OSError:
        return None
    if not commit:
        return None
    return commit + ("+dirty" if dirty else "")


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    return done.stdout.strip() if done.returncode == 0 else None
