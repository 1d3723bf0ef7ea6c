"""Microservice root-cause analysis over RCA100-layout case folders (docs/environments.md).

A data folder holds `cases/<case_id>/` (task.json, topology.json, metrics/logs/traces/alerts
parquet), `answers/<case_id>.json` and usually `index.jsonl`. The environment reads only its
own case folder; the answer file is read by `read_answer`, called once by the scorer when the
agent submits. No tool takes a path: entity and metric names are matched against the case's
own data, so no argument can reach another file.

Tools (one decision turn = one call, or a JSON list of up to 3 calls; 50 turns and at most 150
tool calls): get_data_overview, list_entities, list_metric_names, get_topology, query_metrics,
search_logs, query_traces, get_alerts, submit_root_cause(root_cause_entity, fault_type,
analysis). Outputs are bounded (lines and characters) and say how to narrow a query.

Scoring: FT (fault type among the answer's types), RCL (the entity matches the answer at pod
or service level: the answer pod, its service, or another name of that service's pods) and
Joint (both). Environments: `rca` for any folder in this layout (data_dir= or POS_RCA_DATA)
and `rca-nezha`, which also finds the folder `pos data get rca-nezha` prepares. Category: the case's system
(task.json), so that listing tasks never reads an answer.

One job per module: `data` (the folder and the task listing), `telemetry` (tables, topology,
names, times), `text` (how outputs write numbers and times), `tools/` (each query tool's spec
and implementation), `submission` and `scoring` (the answer key), `environment` (turns and
budgets), `generator/` (synthetic incidents in the same layout).
"""

from pos_agent.envs.rca.data import (
    DATA_ENV_VAR,
    DEFAULT_SPLIT,
    GENERIC_ENV,
    NEZHA_ENV,
    RcaData,
    list_rca_tasks,
)
from pos_agent.envs.rca.environment import (
    CALLS_PER_TURN,
    DEFAULT_MAX_TOOL_CALLS,
    DEFAULT_MAX_TURNS,
    FALLBACK_CALL,
    RcaEnvironment,
)
from pos_agent.envs.rca.scoring import (
    DEFAULT_FAULT_TYPES,
    RcaAnswer,
    RcaScore,
    normalize_fault_type,
    read_answer,
    score_submission,
)
from pos_agent.envs.rca.telemetry import SPAN_ERROR_STATUS, CaseTelemetry, Span, ToolFailure
from pos_agent.envs.rca.text import MAX_OUTPUT_CHARS

__all__ = [
    "CALLS_PER_TURN",
    "DATA_ENV_VAR",
    "DEFAULT_FAULT_TYPES",
    "DEFAULT_MAX_TOOL_CALLS",
    "DEFAULT_MAX_TURNS",
    "DEFAULT_SPLIT",
    "FALLBACK_CALL",
    "GENERIC_ENV",
    "MAX_OUTPUT_CHARS",
    "NEZHA_ENV",
    "SPAN_ERROR_STATUS",
    "CaseTelemetry",
    "RcaAnswer",
    "RcaData",
    "RcaEnvironment",
    "RcaScore",
    "Span",
    "ToolFailure",
    "list_rca_tasks",
    "normalize_fault_type",
    "read_answer",
    "score_submission",
]
