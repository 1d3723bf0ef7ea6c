"""ClinDiag: interactive clinical diagnosis from case records (DESIGN.md section 6).

The doctor agent sees only the initial presentation. Each tool call asks one question of one
record section (history, physical examination, laboratory, radiographic or other tests); a
**provider** answers it from that section alone, and `submit_diagnosis` ends the case, scored by
a **judge** against the record's final diagnosis, which the agent never sees.

- provider `retrieval` (default, deterministic, offline): ranks the section's items against the
  question and returns the best one or two; or a model spec (`local`, `openai:MODEL`, ...) whose
  model answers from the section's record with the `provider` role.
- judge `matcher` (default, deterministic, offline): a normalizing matcher, see
  `match_diagnosis`; or a model spec for an LLM judge (`judge` role) that accepts synonyms,
  abbreviations and clinically equivalent wording and rejects related-but-wrong and unsupported
  over-specific answers. A failing model falls back to retrieval / the matcher; the fallback is
  recorded in the observation's info. `info["judge"]` names the judge that scored the case.

Data: `cases.jsonl` (one case per line, the packed form in ../shared/data/clindiag) or the
upstream layout, one folder per case holding seven JSON files. Splits: `common` (the 302 cases
of the paper's Common half, in `paper_common_sample.txt` order) and `all`. Categories:
`common` / `other`.
"""

from __future__ import annotations

import json
import math
import re
import threading
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pos_agent.envs._episode import BackendResult
from pos_agent.envs._types import EnvError, TaskSpec
from pos_agent.envs.tools import (
    ToolCall,
    ToolCallError,
    ToolEnvironment,
    ToolSpec,
    clip_lines,
    locate_data,
    object_schema,
    parse_tool_calls,
    string_param,
)
from pos_agent.llm import Message, Model, ModelFailure, TokenLedger, load_model

ENV_NAME = "clindiag"
SPLITS = ("common", "all")
DEFAULT_SPLIT = "all"
DEFAULT_MAX_STEPS = 30
DATA_ENV_VAR = "POS_CLINDIAG_DATA"
JSONL_NAME = "cases.jsonl"
COMMON_LIST_NAME = "paper_common_sample.txt"
# The seven files of an upstream case folder, and the sections they hold.
UPSTREAM_FILES = (
    "initial_information",
    "medical_history",
    "physical_examination",
    "laboratory_test",
    "radiographic_test",
    "other_test",
    "diagnosis",
)
NOT_SPECIFIED = {"", "not specified", "not specified.", "n/a", "na", "none", "unknown", "-"}


# -- the record --------------------------------------------------------------------------------


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return "; ".join(t for t in (_text(v) for v in value) if t)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {t}" for k, v in value.items() if (t := _text(v)))
    return str(value)


class DiagnosisKey(BaseModel):
    """The answer key of a case: never shown to the agent."""

    model_config = ConfigDict(frozen=True)
    final_diagnosis: str
    """The diagnosis the judge compares the submission with."""
    differential_diagnosis: list[str] = Field(default_factory=list)
    """Alternatives the case authors considered."""
    diagnostic_reasoning: str = ""
    """Why the authors reached the final diagnosis."""

    @field_validator("final_diagnosis", "diagnostic_reasoning", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> str:
        return _text(value)

    @field_validator("differential_diagnosis", mode="before")
    @classmethod
    def _as_list(cls, value: Any) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str):
            return [value.strip()] if value.strip() else []
        if isinstance(value, list):
            return [t for t in (_text(v) for v in value) if t]
        return [_text(value)]


class ClinDiagCase(BaseModel):
    """One case record (the packed `cases.jsonl` line, or an upstream folder read into it)."""

    model_config = ConfigDict(frozen=True)
    case_id: str
    """Upstream folder name."""
    in_paper_common_sample: bool = False
    """True for the 302 cases of the paper's Common half."""
    initial_information: str
    """What the doctor sees at the start."""
    medical_history: dict[str, str] = Field(default_factory=dict)
    """Chief complaint, present illness, past, family and social history."""
    physical_examination: list[dict[str, str]] = Field(default_factory=list)
    """Examination entries: date, vital signs, findings, changes over time."""
    laboratory_test: list[dict[str, str]] = Field(default_factory=list)
    """Procedures with findings."""
    radiographic_test: list[dict[str, str]] = Field(default_factory=list)
    """Procedures with findings."""
    other_test: list[dict[str, str]] = Field(default_factory=list)
    """Procedures with findings."""
    diagnosis: DiagnosisKey
    """The answer key."""

    @field_validator("initial_information", mode="before")
    @classmethod
    def _initial(cls, value: Any) -> str:
        return _text(value)

    @field_validator("medical_history", mode="before")
    @classmethod
    def _history(cls, value: Any) -> dict[str, str]:
        if isinstance(value, dict):
            return {str(k): _text(v) for k, v in value.items()}
        text = _text(value)
        return {"history": text} if text else {}

    @field_validator(
        "physical_examination", "laboratory_test", "radiographic_test", "other_test", mode="before"
    )
    @classmethod
    def _entries(cls, value: Any) -> list[dict[str, str]]:
        if value is None:
            return []
        items = value if isinstance(value, list) else [value]
        entries = []
        for item in items:
            if isinstance(item, dict):
                entries.append({str(k): _text(v) for k, v in item.items()})
            elif _text(item):
                entries.append({"findings": _text(item)})
        return entries


# -- reading the data ----------------------------------------------------------------------------


@dataclass
class _JsonlIndex:
    """Where each case's line starts in `cases.jsonl`, and which cases are flagged common."""

    offsets: dict[str, int]
    order: list[str]
    flagged_common: list[str]


_INDEX_CACHE: dict[tuple[str, int, int], _JsonlIndex] = {}
_INDEX_LOCK = threading.Lock()


def _jsonl_index(path: Path) -> _JsonlIndex:
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    with _INDEX_LOCK:
        cached = _INDEX_CACHE.get(key)
        if cached is not None:
            return cached
        offsets: dict[str, int] = {}
        order: list[str] = []
        flagged: list[str] = []
        with path.open("rb") as handle:
            offset = 0
            for number, line in enumerate(handle, start=1):
                start, offset = offset, offset + len(line)
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                    case_id = str(data["case_id"])
                except (ValueError, KeyError, TypeError) as exc:
                    raise EnvError(
                        f"{path} line {number} is not a ClinDiag case record ({exc}); "
                        "each line must be a JSON object with a case_id."
                    ) from exc
                if case_id not in offsets:
                    order.append(case_id)
                offsets[case_id] = start
                if data.get("in_paper_common_sample") is True:
                    flagged.append(case_id)
        index = _JsonlIndex(offsets, order, flagged)
        _INDEX_CACHE.clear()
        _INDEX_CACHE[key] = index
        return index


def _unwrap(value: Any, section: str) -> Any:
    """Upstream files wrap their content in one key (e.g. {"laboratory_examinations": [...]})."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if section == "medical_history" and key != "medical_history":
            return value
        if section == "diagnosis" and key != "diagnosis":
            return value
        return inner
    return value


class ClinDiagData:
    """A ClinDiag data folder: `cases.jsonl`, or one folder per case (the upstream layout)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.jsonl = root / JSONL_NAME
        self.folders = root
        if not self.jsonl.is_file():
            self.jsonl = Path()
            nested = root / "benchmark_dataset"
            if nested.is_dir():
                self.folders = nested
            if not any((d / "initial_information.json").is_file() for d in self._case_dirs()):
                raise EnvError(
                    f"{root} holds neither {JSONL_NAME} nor case folders with "
                    "initial_information.json; point data_dir (or "
                    f"{DATA_ENV_VAR}) at the ClinDiag data."
                )

    @classmethod
    def locate(cls, data_dir: str | Path | None = None) -> ClinDiagData:
        root = locate_data(
            "clindiag",
            data_dir=data_dir,
            env_var=DATA_ENV_VAR,
            what="ClinDiag",
            marker=f"{JSONL_NAME}, or one folder per case with the seven upstream JSON files",
        )
        return cls(root)

    @property
    def packed(self) -> bool:
        return self.jsonl != Path()

    def _case_dirs(self) -> list[Path]:
        return sorted(d for d in self.folders.iterdir() if d.is_dir())

    def case_ids(self) -> list[str]:
        if self.packed:
            return list(_jsonl_index(self.jsonl).order)
        return [d.name for d in self._case_dirs() if (d / "initial_information.json").is_file()]

    def common_ids(self) -> list[str]:
        """The paper's Common half: the list file's order if present, else the flags."""
        listing = self.root / COMMON_LIST_NAME
        if listing.is_file():
            wanted = [line.strip() for line in listing.read_text().splitlines() if line.strip()]
            known = set(self.case_ids())
            return [case_id for case_id in wanted if case_id in known]
        if self.packed:
            return list(_jsonl_index(self.jsonl).flagged_common)
        return []

    def load(self, case_id: str) -> ClinDiagCase:
        common = case_id in set(self.common_ids())
        if self.packed:
            offset = _jsonl_index(self.jsonl).offsets.get(case_id)
            if offset is None:
                raise EnvError(
                    f"Unknown ClinDiag case {case_id!r} in {self.jsonl}; "
                    "`pos envs clindiag` lists the cases."
                )
            with self.jsonl.open("rb") as handle:
                handle.seek(offset)
                raw = json.loads(handle.readline())
        else:
            raw = self._load_folder(case_id)
        raw["in_paper_common_sample"] = common or raw.get("in_paper_common_sample") is True
        try:
            return ClinDiagCase.model_validate(raw)
        except ValidationError as exc:
            raise EnvError(f"ClinDiag case {case_id!r} is malformed: {exc}") from exc

    def _load_folder(self, case_id: str) -> dict[str, Any]:
        folder = self.folders / case_id
        if "/" in case_id or "\\" in case_id or case_id in (".", "..") or not folder.is_dir():
            raise EnvError(
                f"Unknown ClinDiag case {case_id!r} in {self.folders}; "
                "`pos envs clindiag` lists the cases."
            )
        raw: dict[str, Any] = {"case_id": case_id}
        for section in UPSTREAM_FILES:
            path = folder / f"{section}.json"
            if not path.is_file():
                continue  # upstream leaves out sections a case does not have
            try:
                raw[section] = _unwrap(json.loads(path.read_text(encoding="utf-8")), section)
            except ValueError as exc:
                raise EnvError(f"{path} is not valid JSON ({exc}).") from exc
        for required in ("initial_information", "diagnosis"):
            if required not in raw:
                raise EnvError(f"ClinDiag case folder {folder} has no {required}.json.")
        return raw


def _check_split(split: str | None) -> str:
    chosen = split or DEFAULT_SPLIT
    if chosen not in SPLITS:
        raise EnvError(f"Unknown ClinDiag split {chosen!r}; use one of {', '.join(SPLITS)}.")
    return chosen


def list_clindiag_tasks(split: str | None, data_dir: str | Path | None = None) -> list[TaskSpec]:
    """The cases of a split: `common` (302, paper order) or `all` (file order)."""
    chosen = _check_split(split)
    data = ClinDiagData.locate(data_dir)
    common = data.common_ids()
    if chosen == "common":
        if not common:
            raise EnvError(
                f"No Common cases marked in {data.root}: add {COMMON_LIST_NAME} (one case id "
                "a line) or use split `all`."
            )
        ids = common
    else:
        ids = data.case_ids()
    common_set = set(common)
    return [
        TaskSpec(
            env=ENV_NAME,
            task_id=case_id,
            category="common" if case_id in common_set else "other",
            split=chosen,
            description="Diagnose a patient from the initial presentation.",
        )
        for case_id in ids
    ]


# -- text normalization shared by the retrieval provider and the matcher -------------------------

# Common clinical abbreviations, expanded on both sides before comparing.
ABBREVIATIONS: dict[str, str] = {
    "abg": "arterial blood gas",
    "aids": "acquired immunodeficiency syndrome",
    "aki": "acute kidney injury",
    "als": "amyotrophic lateral sclerosis",
    "aml": "acute myeloid leukemia",
    "ana": "antinuclear antibody",
    "ards": "acute respiratory distress syndrome",
    "bmp": "basic metabolic panel",
    "bp": "blood pressure",
    "cad": "coronary artery disease",
    "cbc": "complete blood count",
    "chf": "congestive heart failure",
    "ckd": "chronic kidney disease",
    "cll": "chronic lymphocytic leukemia",
    "cml": "chronic myeloid leukemia",
    "cmp": "comprehensive metabolic panel",
    "cmv": "cytomegalovirus",
    "copd": "chronic obstructive pulmonary disease",
    "crp": "c reactive protein",
    "csf": "cerebrospinal fluid",
    "ct": "computed tomography",
    "cta": "computed tomography angiography",
    "cxr": "chest xray",
    "dic": "disseminated intravascular coagulation",
    "dka": "diabetic ketoacidosis",
    "dlbcl": "diffuse large b cell lymphoma",
    "dvt": "deep vein thrombosis",
    "ebv": "epstein barr virus",
    "ecg": "electrocardiogram",
    "echo": "echocardiogram",
    "eeg": "electroencephalogram",
    "ekg": "electrocardiogram",
    "emg": "electromyography",
    "esr": "erythrocyte sedimentation rate",
    "gbs": "guillain barre syndrome",
    "gerd": "gastroesophageal reflux disease",
    "gpa": "granulomatosis with polyangiitis",
    "fbc": "complete blood count",
    "hcc": "hepatocellular carcinoma",
    "hemogram": "complete blood count",
    "hiv": "human immunodeficiency virus",
    "hlh": "hemophagocytic lymphohistiocytosis",
    "hr": "heart rate",
    "hsv": "herpes simplex virus",
    "ibd": "inflammatory bowel disease",
    "itp": "immune thrombocytopenia",
    "lch": "langerhans cell histiocytosis",
    "lft": "liver function test",
    "mi": "myocardial infarction",
    "mri": "magnetic resonance imaging",
    "mra": "magnetic resonance angiography",
    "ms": "multiple sclerosis",
    "nhl": "non hodgkin lymphoma",
    "nsclc": "non small cell lung cancer",
    "pcos": "polycystic ovary syndrome",
    "pcr": "polymerase chain reaction",
    "pe": "pulmonary embolism",
    "pet": "positron emission tomography",
    "ra": "rheumatoid arthritis",
    "rcc": "renal cell carcinoma",
    "sclc": "small cell lung cancer",
    "sle": "systemic lupus erythematosus",
    "tb": "tuberculosis",
    "tia": "transient ischemic attack",
    "tsh": "thyroid stimulating hormone",
    "ttp": "thrombotic thrombocytopenic purpura",
    "ua": "urinalysis",
    "uti": "urinary tract infection",
    "vzv": "varicella zoster virus",
    "wbc": "white blood cell",
}
# British spellings to American ones, applied to the whole lower-cased text.
_SPELLINGS = (
    ("leukaemia", "leukemia"),
    ("anaemia", "anemia"),
    ("aemia", "emia"),
    ("haem", "hem"),
    ("oedema", "edema"),
    ("oesophag", "esophag"),
    ("coeliac", "celiac"),
    ("tumour", "tumor"),
    ("ischaem", "ischem"),
    ("foetal", "fetal"),
    ("diarrhoea", "diarrhea"),
    ("oestrogen", "estrogen"),
    ("sulph", "sulf"),
    ("paediatric", "pediatric"),
    ("x ray", "xray"),
)
_GREEK = {
    "\u03b1": " alpha ",
    "\u03b2": " beta ",
    "\u03b3": " gamma ",
    "\u03b4": " delta ",
    "\u03ba": " kappa ",
}
_WORD = re.compile(r"[a-z0-9]+")
# Words that carry no meaning for matching a question or a diagnosis.
_STOPWORD_TEXT = """a an the of with and in on to for at by from as or is are was were be been any
some this that these those what which who whom whose when where how why does do did has have had
can could would should will may might please tell me about patient patients his her their there it
its all result results test tests show shows showed level levels value values order ordered
perform performed check checked done findings finding evaluation"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Words that do not change a diagnosis (the matcher ignores them on both sides).
_FILLER_TEXT = """a an the of with and in on to for at by from as disease disorder syndrome
condition diagnosis type form final primary likely probable"""
_DIAGNOSIS_FILLER = frozenset(_FILLER_TEXT.split())


def _stem(token: str) -> str:
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 4 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def normalize_text(text: str) -> str:
    """Lower-case ASCII with British spellings and Greek letters rewritten."""
    for letter, word in _GREEK.items():
        text = text.replace(letter, word)
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    lowered = ascii_text.lower().replace("'s ", " ").replace("'", "").replace("-", " ")
    lowered = lowered.replace("/", " ")
    for british, american in _SPELLINGS:
        lowered = lowered.replace(british, american)
    return lowered


def tokens(text: str, *, expand: bool = True) -> list[str]:
    """Stemmed word tokens; abbreviations are expanded when `expand`."""
    out: list[str] = []
    for word in _WORD.findall(normalize_text(text)):
        expansion = ABBREVIATIONS.get(word) if expand else None
        if expansion:
            out.extend(_stem(w) for w in expansion.split())
        else:
            out.append(_stem(word))
    return out


# -- the retrieval provider ----------------------------------------------------------------------

HISTORY_LABELS = {
    "chief_complaint": "Chief complaint",
    "history_of_present_illness": "History of present illness",
    "past_medical_history": "Past medical history",
    "family_history": "Family history",
    "social_history": "Social history",
}
# Words that point a question at a field even when the field's text does not use them.
TITLE_HINTS = {
    "Chief complaint": "complaint main problem presenting symptom why came",
    "History of present illness": "onset duration course symptom started began progression",
    "Past medical history": "past previous prior medication drug allergy surgery operation "
    "chronic illness vaccination hospitalization",
    "Family history": "family mother father sister brother sibling parent relative hereditary "
    "inherited genetic",
    "Social history": "social travel trip abroad smoke smoking tobacco alcohol drink occupation "
    "work job drug sexual pet animal exposure living home diet",
    "Vital signs": "vital temperature fever pulse heart rate blood pressure respiratory "
    "oxygen saturation weight height bmi",
}
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z0-9(])")


@dataclass(frozen=True)
class RecordItem:
    """One answerable piece of a section: a title (field or procedure) and its text."""

    title: str
    text: str
    group: int = 0
    """Items with the same group come from one field or entry (kept together when shown)."""


@dataclass(frozen=True)
class SectionQuery:
    """What one tool asks: the record section and how to present its items."""

    section: str
    label: str
    per_sentence: bool
    max_items: int
    not_found: str


SECTION_QUERIES: dict[str, SectionQuery] = {
    "ask_history": SectionQuery(
        "medical_history",
        "History",
        per_sentence=True,
        max_items=3,
        not_found="The record holds no history that answers this question.",
    ),
    "ask_physical_exam": SectionQuery(
        "physical_examination",
        "Physical examination",
        per_sentence=True,
        max_items=3,
        not_found="The record holds no examination finding that answers this question.",
    ),
    "order_lab_test": SectionQuery(
        "laboratory_test",
        "Laboratory test",
        per_sentence=False,
        max_items=2,
        not_found="No result for this laboratory test in the record (not performed or not "
        "reported).",
    ),
    "order_radiographic_test": SectionQuery(
        "radiographic_test",
        "Radiographic test",
        per_sentence=False,
        max_items=2,
        not_found="No result for this imaging study in the record (not performed or not reported).",
    ),
    "order_other_test": SectionQuery(
        "other_test",
        "Other test",
        per_sentence=False,
        max_items=2,
        not_found="No result for this test in the record (not performed or not reported).",
    ),
}


def _specified(value: str) -> bool:
    return value.strip().lower() not in NOT_SPECIFIED


def section_payload(case: ClinDiagCase, section: str) -> Any:
    """The raw content of one record section (never the diagnosis)."""
    if section == "diagnosis":
        raise ValueError("the diagnosis section is the answer key and is never provided")
    return getattr(case, section)


def section_items(case: ClinDiagCase, query: SectionQuery) -> list[RecordItem]:
    """The items a question about this section is ranked against."""
    items: list[RecordItem] = []
    if query.section == "medical_history":
        for group, (key, value) in enumerate(case.medical_history.items()):
            if not _specified(value):
                continue
            title = HISTORY_LABELS.get(key, key.replace("_", " ").capitalize())
            items.extend(RecordItem(title, s, group) for s in _sentences(value))
        return items
    entries = section_payload(case, query.section)
    for group, entry in enumerate(entries):
        if query.section == "physical_examination":
            for key, title in (
                ("vital_signs", "Vital signs"),
                ("relevant_findings", "Examination"),
                ("relevant_foundings", "Examination"),
                ("changes_over_time", "Changes over time"),
            ):
                value = entry.get(key, "")
                if _specified(value):
                    items.extend(RecordItem(title, s, group) for s in _sentences(value))
            continue
        name = entry.get("procedure_name") or entry.get("name") or "Test"
        details = [entry.get("findings", "")]
        changes = entry.get("changes_over_time", "")
        if _specified(changes):
            details.append(f"Changes over time: {changes}")
        date = entry.get("date", "")
        if _specified(date):
            details.append(f"Date: {date}")
        text = " ".join(d for d in details if _specified(d)) or "No findings reported."
        items.append(RecordItem(name, text, group))
    return items


def _sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENTENCE.split(text.strip()) if p.strip()]
    return parts or [text.strip()]


def rank_items(question: str, items: Sequence[RecordItem]) -> list[tuple[float, RecordItem]]:
    """Items scored against the question (IDF-weighted overlap; title words count double)."""
    asked = {t for t in tokens(question) if t not in _STOPWORDS}
    if not asked or not items:
        return []
    item_title = [set(tokens(f"{i.title} {TITLE_HINTS.get(i.title, '')}")) for i in items]
    item_text = [set(tokens(i.text)) for i in items]
    count = len(items)
    frequency: dict[str, int] = {}
    for title, text in zip(item_title, item_text, strict=True):
        for token in title | text:
            frequency[token] = frequency.get(token, 0) + 1
    scored: list[tuple[float, RecordItem]] = []
    for item, title, text in zip(items, item_title, item_text, strict=True):
        score = 0.0
        for token in asked:
            weight = 2.0 if token in title else 1.0 if token in text else 0.0
            if weight:
                score += weight * math.log(1.0 + count / frequency[token])
        if score > 0:
            scored.append((score, item))
    scored.sort(key=lambda pair: -pair[0])
    return scored


def retrieval_answer(case: ClinDiagCase, tool: str, question: str) -> str:
    """The deterministic provider: the best-matching items of the tool's section."""
    query = SECTION_QUERIES[tool]
    items = section_items(case, query)
    asked = {t for t in tokens(question) if t not in _STOPWORDS}
    # A question that names a history field or "vital signs" gets that field whole.
    whole = [
        title
        for title in dict.fromkeys(i.title for i in items)
        if (words := {t for t in tokens(title) if t not in _STOPWORDS}) and words <= asked
    ]
    if whole and query.per_sentence:
        lines = [
            f"{title}: {' '.join(i.text for i in items if i.title == title)}" for title in whole
        ]
        return clip_lines(lines, max_lines=4, max_chars=1500, what="lines")
    ranked = rank_items(question, items)
    if not ranked:
        return query.not_found
    best = ranked[0][0]
    # Near-ties only: a second item must be almost as relevant as the best one.
    chosen = [item for score, item in ranked if score >= 0.7 * best][: query.max_items]
    if query.per_sentence:
        # Keep the record's order, grouped by field, so the answer reads naturally.
        order = {id(item): n for n, item in enumerate(items)}
        chosen.sort(key=lambda item: order[id(item)])
        lines = []
        for title in dict.fromkeys(i.title for i in chosen):
            lines.append(f"{title}: {' '.join(i.text for i in chosen if i.title == title)}")
    else:
        lines = [f"{item.title}: {item.text}" for item in chosen]
    return clip_lines(lines, max_lines=4, max_chars=1500, what="lines")


# -- the LLM provider and judge ------------------------------------------------------------------


class ProviderReply(BaseModel):
    """The provider model's answer to one question."""

    answer: str = Field(description="The answer, from the record section only.")


class JudgeVerdict(BaseModel):
    """The judge model's verdict on a submitted diagnosis."""

    correct: bool = Field(description="True if the submission names the reference diagnosis.")
    reason: str = Field(default="", description="One sentence: why.")


PROVIDER_SYSTEM = """You hold one section of a patient's medical record and answer a doctor's \
question about it. Answer ONLY what is asked, using ONLY the record section below: report the \
matching findings in one to three sentences, never other results, never a diagnosis or an \
interpretation. If the section does not contain the answer, say exactly: "Not documented in the \
record."

Record section ({label}):
{record}"""

JUDGE_SYSTEM = """You are grading a doctor's final diagnosis against the reference diagnosis of \
a clinical case. Answer correct = true when the submission names the same disease as the \
reference: accept synonyms, abbreviations, eponyms and clinically equivalent wording, and accept \
a submission that states the reference diagnosis with less detail only when the missing detail \
does not change the disease. Answer correct = false when the submission is a related but \
different disease (a different subtype, organ, cause or stage), when it is more specific than \
the reference in a way the reference does not support, or when it hedges between several \
diseases."""


@dataclass
class RoleModel:
    """A provider or judge model, loaded on first use; after a load failure it stays off."""

    spec: str | Model
    role: str
    ledger: TokenLedger
    _model: Model | None = None
    _failed: str | None = None

    @property
    def label(self) -> str:
        name = self.spec if isinstance(self.spec, str) else getattr(self.spec, "spec", "model")
        return f"llm:{name}"

    def complete(
        self, messages: list[Message], schema: type[BaseModel], step: int, max_tokens: int
    ) -> BaseModel:
        """The parsed answer; raises ModelFailure (already accounted) when there is none."""
        if self._failed is not None:
            raise ModelFailure("config", self._failed, model=self.label)
        if self._model is None:
            if isinstance(self.spec, str):
                try:
                    self._model = load_model(self.spec)
                except ModelFailure as failure:
                    self._failed = str(failure)
                    raise
            else:
                self._model = self.spec
        try:
            answer = self._model.complete(
                messages, schema=schema, max_tokens=max_tokens, temperature=0.0, role=self.role
            )
        except ModelFailure as failure:
            self.ledger.record(self.role, failure, step)
            raise
        self.ledger.record(self.role, answer, step)
        if not isinstance(answer.parsed, schema):
            raise ModelFailure("schema", "the model gave no parsed answer", model=self.label)
        return answer.parsed


# -- the matcher ---------------------------------------------------------------------------------

_QUALIFIER = re.compile(
    r",|;|:| - | with | due to | secondary to | caused by | associated with | complicated by "
    r"| in the setting of | presenting as | related to "
)
_PARENTHESES = re.compile(r"\(([^()]*)\)")
_EXAMPLE_MARKERS = ("e.g", "eg ", "i.e", "ie ", "possibly", "probably", "likely", "see ")


@dataclass(frozen=True)
class MatchVerdict:
    """The matcher's decision and the reference variant it matched (if any)."""

    correct: bool
    reason: str
    matched: str | None = None


def _content(text: str) -> frozenset[str]:
    return frozenset(t for t in tokens(text) if t not in _DIAGNOSIS_FILLER)


def reference_variants(reference: str) -> list[str]:
    """Wordings of the reference the matcher accepts as the same diagnosis.

    The full text; the text without parentheses; a short parenthetical (an abbreviation or
    synonym, e.g. "(X-LAG)"); each alternative of "A or B"; and the main diagnosis before a
    qualifier ("A with B", "A, not otherwise specified", "A due to B") when it has at least two
    words, so that a bare organ or class ("vasculitis") is not enough.
    """
    variants: list[str] = [reference]
    bare = _PARENTHESES.sub(" ", reference)
    variants.append(bare)
    for inner in _PARENTHESES.findall(reference):
        lowered = inner.strip().lower()
        if inner.strip() and len(inner.split()) <= 4 and not lowered.startswith(_EXAMPLE_MARKERS):
            variants.append(inner)
    alternatives = [a for a in re.split(r"\s+(?:and/or|or)\s+", bare) if a.strip()]
    if len(alternatives) > 1:
        variants.extend(alternatives)
    for text in [bare, *alternatives]:
        head = _QUALIFIER.split(f" {text} ", maxsplit=1)[0]
        if len(_content(head)) >= 2:
            variants.append(head)
    return [v for v in dict.fromkeys(v.strip() for v in variants) if _content(v)]


def match_diagnosis(reference: str, submitted: str) -> MatchVerdict:
    """The deterministic judge: does the submitted final diagnosis name the reference?

    Both sides are normalized (case, accents, British spellings, hyphens, plurals, common
    clinical abbreviations expanded, filler words such as "disease"/"syndrome" ignored) and
    compared as word sets. The submission is correct when it contains every word of one accepted
    variant of the reference (`reference_variants`) and no word the reference does not have:
    a reworded or less detailed answer passes; a different disease or an over-specific,
    unsupported addition fails.
    """
    said = _content(submitted)
    if not said:
        return MatchVerdict(False, "the submission names no diagnosis")
    allowed = _content(reference)
    for inner in _PARENTHESES.findall(reference):
        allowed |= _content(inner)
    for variant in reference_variants(reference):
        needed = _content(variant)
        if needed <= said and said <= allowed | needed:
            return MatchVerdict(True, f"matches the reference wording {variant!r}", variant)
    extra = sorted(said - allowed)
    missing = sorted(_content(reference) - said)
    reason = "differs from the reference"
    if extra:
        reason += f"; words not in the reference: {', '.join(extra[:6])}"
    if missing:
        reason += f"; reference words missing: {', '.join(missing[:6])}"
    return MatchVerdict(False, reason)


# -- the environment -----------------------------------------------------------------------------

QUESTION = string_param("One question, e.g. 'Any recent travel or sick contacts?'")
TEST = string_param("The one test to order, e.g. 'complete blood count'.")

CLINDIAG_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "ask_history",
        "Ask the patient one history question (complaint, present illness, past, family, "
        "social history).",
        object_schema(["question"], question=QUESTION),
    ),
    ToolSpec(
        "ask_physical_exam",
        "Ask for one physical-examination finding or the vital signs.",
        object_schema(
            ["question"], question=string_param("What to examine, e.g. 'abdominal examination'.")
        ),
    ),
    ToolSpec(
        "order_lab_test",
        "Order one laboratory test and get its result.",
        object_schema(["test"], test=TEST),
    ),
    ToolSpec(
        "order_radiographic_test",
        "Order one imaging study (X-ray, CT, MRI, ultrasound, ...) and get its report.",
        object_schema(["test"], test=string_param("The imaging study, e.g. 'chest CT'.")),
    ),
    ToolSpec(
        "order_other_test",
        "Order one other test (ECG, biopsy, endoscopy, pathology, genetic test, ...).",
        object_schema(["test"], test=string_param("The test, e.g. 'skin biopsy'.")),
    ),
    ToolSpec(
        "submit_diagnosis",
        "Submit your final answer; this ends the case.",
        object_schema(
            ["final_diagnosis"],
            final_diagnosis=string_param("The single most likely diagnosis."),
            differential_diagnosis={
                "type": "array",
                "items": {"type": "string"},
                "description": "Other diagnoses you considered.",
            },
            diagnostic_reasoning=string_param("Why the findings support the final diagnosis."),
        ),
    ),
)


@dataclass
class Submission:
    """What the doctor submitted."""

    final_diagnosis: str
    differential_diagnosis: list[str] = field(default_factory=list)
    diagnostic_reasoning: str = ""


class ClinDiagEnvironment(ToolEnvironment):
    """One ClinDiag case behind the diagnosis interface."""

    name: str = ENV_NAME

    def __init__(
        self,
        case_id: str,
        *,
        split: str | None = None,
        max_steps: int | None = None,
        data_dir: str | Path | None = None,
        provider: str | Model = "retrieval",
        judge: str | Model = "matcher",
    ) -> None:
        chosen = _check_split(split)
        data = ClinDiagData.locate(data_dir)
        case = data.load(case_id.strip())
        if chosen == "common" and not case.in_paper_common_sample:
            raise EnvError(
                f"ClinDiag case {case_id!r} is not in the common split; use split `all`."
            )
        super().__init__(
            task_id=case.case_id,
            max_steps=max_steps or DEFAULT_MAX_STEPS,
            category="common" if case.in_paper_common_sample else "other",
            split=chosen,
        )
        self.case = case
        self.data_root = data.root
        self.ledger = TokenLedger()
        self.provider_name = _role_name(provider, "retrieval")
        self.judge_name = _role_name(judge, "matcher")
        self._provider = (
            None
            if self.provider_name == "retrieval"
            else RoleModel(provider, "provider", self.ledger)
        )
        self._judge = (
            None if self.judge_name == "matcher" else RoleModel(judge, "judge", self.ledger)
        )

    @property
    def tool_specs(self) -> list[ToolSpec]:
        return list(CLINDIAG_TOOLS)

    # -- BudgetedEnvironment ---------------------------------------------------------------

    def _backend_reset(self) -> BackendResult:
        self.goal = (
            "Diagnose the patient: gather the history, examination and test results you need, "
            "then submit the final diagnosis with submit_diagnosis."
        )
        names = ", ".join(t.name for t in CLINDIAG_TOOLS)
        text = (
            f"Clinical case {self.case.case_id}.\n"
            f"Patient presentation: {self.case.initial_information}\n\n"
            "You are the doctor. Each tool call asks one question or orders one test; you have "
            f"{self.max_steps} tool calls in all, the submission included.\n"
            f"Tools: {names}.\n"
            'Action format: {"tool": "<name>", "args": {...}}, e.g. '
            '{"tool": "order_lab_test", "args": {"test": "complete blood count"}}.'
        )
        return BackendResult(text=text, admissible_actions=None, extra=self._base_info())

    def _backend_step(self, action: str) -> BackendResult:
        try:
            (call,) = parse_tool_calls(action, CLINDIAG_TOOLS)
        except ToolCallError as error:
            invalid = self.invalid_result(str(error))
            invalid.extra.update(self._base_info())
            return self._pending(invalid)
        if call.tool == "submit_diagnosis":
            return self._submit(call)
        text, extra = self._answer(call)
        left = self.max_steps - self.steps_used
        result = BackendResult(
            text=f"{text}\n[{left} tool call(s) left]",
            admissible_actions=None,
            extra={**self._base_info(), **extra, "tool": call.tool},
        )
        return self._pending(result)

    def _backend_restart(self) -> None:
        """Nothing runs in the background: a restart has nothing to replace."""

    def _backend_close(self) -> None:
        """Nothing to stop."""

    # -- tools -----------------------------------------------------------------------------

    def _answer(self, call: ToolCall) -> tuple[str, dict[str, Any]]:
        question = str(next(iter(call.args.values())))
        extra: dict[str, Any] = {"provider": self.provider_name}
        if self._provider is not None:
            query = SECTION_QUERIES[call.tool]
            record = json.dumps(
                section_payload(self.case, query.section), ensure_ascii=False, indent=1
            )
            messages = [
                Message("system", PROVIDER_SYSTEM.format(label=query.label, record=record)),
                Message("user", question),
            ]
            try:
                reply = self._provider.complete(
                    messages, ProviderReply, step=self.steps_used, max_tokens=256
                )
                assert isinstance(reply, ProviderReply)
                if reply.answer.strip():
                    return reply.answer.strip(), extra
                raise ModelFailure("empty", "the provider answered with empty text")
            except ModelFailure as failure:
                extra["provider"] = "retrieval"
                extra["provider_fallback"] = (
                    f"{self._provider.label} failed ({failure}); answered by retrieval"
                )
        return retrieval_answer(self.case, call.tool, question), extra

    def _submit(self, call: ToolCall) -> BackendResult:
        submission = Submission(
            final_diagnosis=str(call.args["final_diagnosis"]),
            differential_diagnosis=list(call.args.get("differential_diagnosis", [])),
            diagnostic_reasoning=str(call.args.get("diagnostic_reasoning", "")),
        )
        correct, judge, details = self._judge_submission(submission)
        verdict = "correct" if correct else "incorrect"
        return BackendResult(
            text=f"Diagnosis submitted: {submission.final_diagnosis}. The case is closed "
            f"(judged {verdict}).",
            admissible_actions=None,
            done=True,
            success=correct,
            score=1.0 if correct else 0.0,
            extra={
                **self._base_info(),
                **details,
                "metrics": {"accuracy": int(correct)},
                "judge": judge,
                "submission": {
                    "final_diagnosis": submission.final_diagnosis,
                    "differential_diagnosis": submission.differential_diagnosis,
                    "diagnostic_reasoning": submission.diagnostic_reasoning,
                },
                "reference_diagnosis": self.case.diagnosis.final_diagnosis,
            },
        )

    def _judge_submission(self, submission: Submission) -> tuple[bool, str, dict[str, Any]]:
        reference = self.case.diagnosis.final_diagnosis
        details: dict[str, Any] = {}
        if self._judge is not None:
            messages = [
                Message("system", JUDGE_SYSTEM),
                Message(
                    "user",
                    f"Reference diagnosis: {reference}\n"
                    f"Submitted final diagnosis: {submission.final_diagnosis}",
                ),
            ]
            try:
                verdict = self._judge.complete(
                    messages, JudgeVerdict, step=self.steps_used, max_tokens=128
                )
                assert isinstance(verdict, JudgeVerdict)
                details["judge_reason"] = verdict.reason
                return verdict.correct, self._judge.label, details
            except ModelFailure as failure:
                details["judge_fallback"] = (
                    f"{self._judge.label} failed ({failure}); scored by the matcher"
                )
        match = match_diagnosis(reference, submission.final_diagnosis)
        details["judge_reason"] = match.reason
        return match.correct, "matcher", details

    # -- info ------------------------------------------------------------------------------

    def _base_info(self) -> dict[str, Any]:
        return {"subset": self.category, "calls_left": self.max_steps - self.steps_used}

    def _pending(self, result: BackendResult) -> BackendResult:
        """A non-terminal result; on the last unit of budget it carries the failure metrics."""
        if not result.done and self.steps_used >= self.max_steps:
            result.extra.update(
                {"metrics": {"accuracy": 0}, "judge": "none", "subset": self.category}
            )
        return result


def _role_name(spec: str | Model, offline: str) -> str:
    if isinstance(spec, str):
        cleaned = spec.strip()
        return offline if cleaned in ("", offline) else cleaned
    return str(getattr(spec, "spec", "model"))


def iter_cases(data_dir: str | Path | None = None) -> Iterable[ClinDiagCase]:
    """Every case of a data folder (for scripts and tests)."""
    data = ClinDiagData.locate(data_dir)
    for case_id in data.case_ids():
        yield data.load(case_id)


def case_answer(case: ClinDiagCase) -> Mapping[str, Any]:
    """The answer key as plain data (for scripted policies in tests and offline checks)."""
    return case.diagnosis.model_dump()
