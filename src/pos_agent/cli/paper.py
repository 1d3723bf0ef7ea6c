"""`pos paper`: the paper's grid (or any study) as one resumable run, planned and priced first.

    pos paper table1 --model SPEC [--model SPEC ...] [--dry-run] [--max-cost USD] ...
    pos paper run STUDY.yaml [--dry-run] [--max-cost USD] ...

Every cell runs into one run folder through the bench runner (`run_bench`): the same workers,
Ray executor, shards, resume and run-folder rules as `pos bench` (cli/study_run.py).
`pos report RUN --paper` renders the paper's tables from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pos_agent.bench.paper import PAPER_BACKBONES, paper_backbone
from pos_agent.bench.study import Backbone, Study, load_study, paper_study
from pos_agent.cli.app import app
from pos_agent.cli.study_options import RunOptions, run_options
from pos_agent.cli.study_run import fail, run_study

paper_app = typer.Typer(
    help="The paper's tables as one resumable run: plan and price the grid, run every cell.",
    no_args_is_help=True,
)
app.add_typer(paper_app, name="paper")

ModelsOption = Annotated[
    list[str],
    typer.Option(
        "--model",
        help="A backbone (repeat for several): a model spec, optionally =PAPER_BACKBONE to be "
        f"compared with one of the paper's ({', '.join(PAPER_BACKBONES)}), e.g. "
        "openai:gpt-4o-mini=Qwen3.7-Plus.",
    ),
]
SuitesOption = Annotated[
    str | None,
    typer.Option(
        help="Comma-separated suites instead of the paper's four (alfworld, loca, rca-nezha, "
        "clindiag-paper: Common + Rare), e.g. alfworld-mini,rca-nezha."
    ),
]
MethodsOption = Annotated[
    str | None, typer.Option(help="Comma-separated methods instead of the paper's eight.")
]
EnvModelOption = Annotated[
    str,
    typer.Option(
        help="ClinDiag's provider and judge: paper (the paper's Qwen3.7-Plus via DashScope), "
        "backbone (each backbone its own), offline (the retrieval and matcher stand-ins), or a "
        "model spec.",
    ),
]
EmbedOption = Annotated[
    str,
    typer.Option(
        help="PACE's embeddings: paper (DashScope text-embedding-v4), tfidf (offline), or an "
        "embeddings spec.",
    ),
]


@paper_app.command()
@run_options
def table1(
    model: ModelsOption,
    suites: SuitesOption = None,
    methods: MethodsOption = None,
    env_model: EnvModelOption = "paper",
    embed_model: EmbedOption = "paper",
    *,
    options: RunOptions,
) -> None:
    """Run the paper's Table 1 grid (4 benchmarks x 8 methods) for each --model, into one run.

    Every paper setting is the default; --env-model offline and --embed-model tfidf are the
    offline stand-ins. Exits 0 when done, 130 after Ctrl-C/SIGTERM, 4 when --max-cost stopped
    it (both resumable with --run NAME --resume).

    Example: pos paper table1 --model dashscope:qwen3.7-plus --dry-run --price-table prices.yaml
    """
    study = paper_study(
        [parse_backbone(m) for m in model], env_model=env_model, embed_model=embed_model
    )
    changes: dict[str, object] = {}
    if suites:
        changes["suites"] = [s.strip() for s in suites.split(",") if s.strip()]
    if methods:
        changes["methods"] = [m.strip() for m in methods.split(",") if m.strip()]
    try:
        study = Study.model_validate({**study.model_dump(), **changes})
    except ValueError as exc:
        fail(str(exc))
    run_study(study, options)


@paper_app.command("run")
@run_options
def run_file(
    study_file: Annotated[Path, typer.Argument(help="A study YAML (suites, methods, backbones).")],
    *,
    options: RunOptions,
) -> None:
    """Run a study YAML (suites x methods x backbones) into one run, as `pos paper table1`.

    Example: pos paper run study.yaml --dry-run
    """
    try:
        study = load_study(study_file)
    except ValueError as exc:
        fail(str(exc))
    run_study(study, options)


def parse_backbone(text: str) -> Backbone:
    """`SPEC`, or `SPEC=PAPER_BACKBONE` to compare it with one of the paper's backbones."""
    spec, equals, name = text.rpartition("=")
    known = paper_backbone(name) if equals else None
    if spec and known is not None:
        return Backbone(model=spec.strip(), paper=known)
    return Backbone(model=text.strip())
