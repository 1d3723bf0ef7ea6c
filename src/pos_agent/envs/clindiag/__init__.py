"""ClinDiag: interactive clinical diagnosis from case records (docs/environments.md).

The doctor agent sees only the initial presentation. Each tool call asks one question of one
record section (history, physical examination, laboratory, radiographic or other tests); a
**provider** answers it from that section alone, and `submit_diagnosis` ends the case, scored by
a **judge** against the record's final diagnosis, which the agent never sees.

Provider and judge are given by the harness, never loaded here: a `Model` (the paper's fixed
LLM, the same for every method and backbone; `pos run/bench --env-model SPEC`), or the offline
options `retrieval` (the section's best-matching items, deterministic) and `matcher` (a
normalizing word matcher, see `match_diagnosis`). A malformed model answer is asked again as a
fresh call, up to twice; a provider that still fails leaves that one answer to retrieval (said
in the observation), a judge that still fails gives no verdict
(`info["judge_failed"]`; the environment reports no success, and the harness records the case
as unscored, never as a failure). `info["judge"]` names the judge that scored the case.

Data: `cases.jsonl` (one case per line, the packed form `pos data get clindiag` prepares) or the
upstream layout, one folder per case holding seven JSON files. Splits: `common` (the 302 cases
of the paper's Common half, in `paper_common_sample.txt` order), `rare` (the paper's Rare half:
ClinDiag's Rare Disease subset, `rare0` .. `rare301`), `paper` (Common + Rare, interleaved) and
`all`. Categories: `common` / `rare` / `other`.

One job per module: `record` (the case), `data` (reading and listing), `tools` (the tool specs
and the section each asks), `text` (clinical word normalization), `retrieval` and `matcher`
(the offline provider and judge), `model_calls`, `provider` and `judge` (the model roles),
`environment` (the episode).
"""

from pos_agent.envs.clindiag.data import (
    COMMON_LIST_NAME,
    DATA_ENV_VAR,
    DEFAULT_SPLIT,
    ENV_NAME,
    RARE_PREFIX,
    SPLITS,
    ClinDiagData,
    case_answer,
    case_category,
    is_rare_name,
    iter_cases,
    list_clindiag_tasks,
)
from pos_agent.envs.clindiag.environment import (
    DEFAULT_MAX_STEPS,
    MODEL_ROLES,
    OFFLINE_JUDGE,
    OFFLINE_PROVIDER,
    ClinDiagEnvironment,
    Submission,
)
from pos_agent.envs.clindiag.judge import (
    JUDGE_SYSTEM,
    MAX_SUBMISSION_CHARS,
    JudgeVerdict,
    judge_messages,
    quoted_submission,
)
from pos_agent.envs.clindiag.matcher import MatchVerdict, match_diagnosis, reference_variants
from pos_agent.envs.clindiag.model_calls import RETRIES
from pos_agent.envs.clindiag.provider import PROVIDER_SYSTEM, ProviderReply
from pos_agent.envs.clindiag.record import ClinDiagCase, DiagnosisKey
from pos_agent.envs.clindiag.retrieval import rank_items, retrieval_answer, section_items
from pos_agent.envs.clindiag.text import fold_spelling, tokens
from pos_agent.envs.clindiag.tools import CLINDIAG_TOOLS, FALLBACK_CALL, SECTION_QUERIES

__all__ = [
    "CLINDIAG_TOOLS",
    "COMMON_LIST_NAME",
    "DATA_ENV_VAR",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_SPLIT",
    "ENV_NAME",
    "FALLBACK_CALL",
    "JUDGE_SYSTEM",
    "MAX_SUBMISSION_CHARS",
    "MODEL_ROLES",
    "OFFLINE_JUDGE",
    "OFFLINE_PROVIDER",
    "PROVIDER_SYSTEM",
    "RARE_PREFIX",
    "RETRIES",
    "SECTION_QUERIES",
    "SPLITS",
    "ClinDiagCase",
    "ClinDiagData",
    "ClinDiagEnvironment",
    "DiagnosisKey",
    "JudgeVerdict",
    "MatchVerdict",
    "ProviderReply",
    "Submission",
    "case_answer",
    "case_category",
    "fold_spelling",
    "is_rare_name",
    "iter_cases",
    "judge_messages",
    "list_clindiag_tasks",
    "match_diagnosis",
    "quoted_submission",
    "rank_items",
    "reference_variants",
    "retrieval_answer",
    "section_items",
    "tokens",
]
