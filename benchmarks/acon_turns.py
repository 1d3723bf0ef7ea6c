"""How big a ClinDiag or RCA turn is offline, and when ACON's trigger fires for a threshold.

    python -m benchmarks.acon_turns [--bench clindiag|rca] [--cases 25]
                                        [--thresholds 256,512,1024,4096]

ACON compresses when the previous summary plus the turns older than the last 3 exceed its
threshold T (`agents/context/acon.py`). A T that never fires within the benchmark's budget makes
ACON the raw trajectory, so the ClinDiag suite's T is chosen from this measurement. Each of the
first `--cases` Common cases (the paper's order) is played through the real environment with its
offline provider (retrieval): one fixed, case-independent list of 29 questions a doctor asks
(history, examination, laboratory, imaging, other tests), the 29 question calls the 30-call
budget leaves before the submission. A turn is measured as ACON keeps it (`Transition`: the step label,
the action, the observation), in the token estimate every context method uses. Printed: the turn
size (median, p90, max), and per threshold in how many cases the trigger fires within the
budget and at which step it first fires (median over the cases that fire), assuming no summary
yet; the last line is `fires within <n> turns: T=<t>: <k>/<n> ...`.

`--bench rca`: the first `--cases` rca-nezha incidents, each played for its 50 turns with the
fixed round robin of query tools of `perf.baselines` (overview, entities, alerts, then metrics,
traces, topology, logs and metric names per service), one call a turn: a lower bound on a turn,
which may carry up to 3 calls.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from pathlib import Path

from pos_agent.agents.context.settings import AconSettings
from pos_agent.envs import list_tasks
from pos_agent.envs.clindiag.data import ClinDiagData
from pos_agent.envs.clindiag.environment import ClinDiagEnvironment
from pos_agent.transition import Transition

# (tool, question): the same for every case, in the order a doctor might ask them.
QUESTIONS: tuple[tuple[str, str], ...] = (
    ("ask_history", "What is the main complaint and when did it start?"),
    ("ask_history", "How has the illness developed since it began?"),
    ("ask_history", "Any fever, weight loss or night sweats?"),
    ("ask_history", "Any past medical or surgical history?"),
    ("ask_history", "Which medications do you take, and any allergies?"),
    ("ask_history", "Any family history of similar illness?"),
    ("ask_history", "Smoking, alcohol, occupation, travel or sick contacts?"),
    ("ask_history", "Any pain, and where?"),
    ("ask_physical_exam", "vital signs"),
    ("ask_physical_exam", "general appearance"),
    ("ask_physical_exam", "cardiovascular examination"),
    ("ask_physical_exam", "respiratory examination"),
    ("ask_physical_exam", "abdominal examination"),
    ("ask_physical_exam", "neurological examination"),
    ("ask_physical_exam", "skin and lymph nodes"),
    ("order_lab_test", "complete blood count"),
    ("order_lab_test", "basic metabolic panel"),
    ("order_lab_test", "liver function tests"),
    ("order_lab_test", "C-reactive protein and erythrocyte sedimentation rate"),
    ("order_lab_test", "urinalysis"),
    ("order_lab_test", "blood culture"),
    ("order_lab_test", "coagulation profile"),
    ("order_radiographic_test", "chest X-ray"),
    ("order_radiographic_test", "CT of the abdomen"),
    ("order_radiographic_test", "MRI of the brain"),
    ("order_radiographic_test", "ultrasound"),
    ("order_other_test", "electrocardiogram"),
    ("order_other_test", "biopsy"),
    ("order_other_test", "endoscopy"),
)
DEFAULT_THRESHOLDS = (256, 384, 512, 768, 1024, 2048, 4096)


def case_turns(case_id: str, data_dir: str | None = None) -> list[Transition]:
    """The 29 turns of one case, played through the environment offline."""
    env = ClinDiagEnvironment(case_id, split="common", data_dir=data_dir)
    env.reset()
    turns: list[Transition] = []
    for tool, question in QUESTIONS:
        key = "question" if tool in ("ask_history", "ask_physical_exam") else "test"
        action = json.dumps({"tool": tool, "args": {key: question}})
        observation = env.step(action)
        turns.append(Transition(len(turns) + 1, action, observation.text))
    env.close()
    return turns


def rca_turns(case_id: str, data_dir: str | None = None, steps: int = 50) -> list[Transition]:
    """The first `steps` turns of one RCA incident under the fixed round robin."""
    from benchmarks.baselines import record

    recording = record(case_id, Path(data_dir) if data_dir else None, steps)
    return [
        Transition(i + 1, action, observation.text)
        for i, (action, observation) in enumerate(recording.turns[:steps])
    ]


def first_fire(turns: Sequence[Transition], threshold: int, keep_last: int) -> int | None:
    """The step at whose decision the trigger first fires (no summary yet), or None."""
    for seen in range(1, len(turns) + 1):
        aged = turns[: max(0, seen - keep_last)]
        if aged and sum(t.tokens for t in aged) > threshold:
            return seen
    return None


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", choices=("clindiag", "rca"), default="clindiag")
    parser.add_argument("--cases", type=int, default=25)
    parser.add_argument(
        "--thresholds", default=",".join(str(t) for t in DEFAULT_THRESHOLDS), type=str
    )
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    thresholds = [int(t) for t in args.thresholds.split(",") if t.strip()]
    keep_last = AconSettings(threshold_tokens=1, summary_tokens=1).keep_last_turns
    if args.bench == "clindiag":
        ids = ClinDiagData.locate(args.data_dir).common_ids()[: args.cases]
        per_case = [case_turns(case_id, args.data_dir) for case_id in ids]
        what = f"clindiag common: {len(ids)} cases x {len(QUESTIONS)} questions"
    else:
        ids = [t.task_id for t in list_tasks("rca-nezha")][: args.cases]
        per_case = [rca_turns(case_id, args.data_dir) for case_id in ids]
        what = f"rca-nezha: {len(ids)} incidents x 50 turns of one call"
    turns_per_case = len(per_case[0])
    sizes = sorted(t.tokens for turns in per_case for t in turns)
    p90 = sizes[int(0.9 * (len(sizes) - 1))]
    print(
        f"{what} = {len(sizes)} turns; "
        f"turn tokens median={statistics.median(sizes):.0f} p90={p90} max={sizes[-1]}"
    )
    summary = []
    for threshold in thresholds:
        fires = [first_fire(turns, threshold, keep_last) for turns in per_case]
        fired = [f for f in fires if f is not None]
        at = f"first at step {statistics.median(fired):.0f} (median)" if fired else "never"
        print(f"T={threshold}: fires in {len(fired)}/{len(ids)} cases; {at}")
        summary.append(f"T={threshold}: {len(fired)}/{len(ids)}")
    print(f"fires within {turns_per_case} turns: " + " ".join(summary))


if __name__ == "__main__":
    main()
