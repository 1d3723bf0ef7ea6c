"""`pos trapbench real build`: rebuild the real-trajectory corpus from its source files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

console = Console(highlight=False, soft_wrap=True)
real_app = typer.Typer(
    help=(
        "The real-trajectory corpus: agent trajectories from public repositories and issue "
        "threads, labelled by reading. The repository holds its manifest, labels and "
        "converters; `build` rebuilds the trajectories from the source files."
    ),
    no_args_is_help=True,
)


@real_app.command()
def build(
    source: Annotated[
        Path,
        typer.Option(
            "--from",
            help="Folder holding the source files under any name (found by sha256), or git "
            "directories of the source repositories (owner+name/repo, as `fetch` leaves them).",
        ),
    ],
    out: Annotated[
        Path, typer.Option(help="Folder to write the corpus to (replaced whole).")
    ] = Path("real"),
) -> None:
    """Rebuild the real corpus from its source files, checked against the manifest's sha256.

    A git directory is read at the manifest's commit (`git --git-dir DIR show COMMIT:PATH`).
    A source file that is missing or different is listed with how to get it, and only its
    trajectories are left out. The folder is written whole, then renamed into place:
    trajectories.jsonl, the manifest and labels of what was built, and build.json (what was
    built and what was missing).

    Example: pos trapbench real build --from sources --out real
    """
    from pos_agent.cli.common import shown
    from pos_trapbench.real.build import BUILD_FILE, build_corpus

    if not source.is_dir():
        console.print(f"[red]error:[/] {source} is not a folder")
        raise typer.Exit(2)
    try:
        report = build_corpus(source, out)
    except (OSError, ValueError) as exc:
        console.print(f"[red]error:[/] {shown(exc)}")
        raise typer.Exit(2) from None
    for item in report.missing:
        at = f"@{item.commit}" if item.commit else ""
        what = "has another sha256" if item.problem == "different" else "not found"
        console.print(
            f"[yellow]{item.problem}[/] "
            + escape(
                f"{item.repo}{at}:{item.path} ({what}; {len(item.trajectories)} trajectories)"
                f"\n  looked: {item.where}\n  get it: {item.how_to_get}"
            )
        )
    for failed in report.unconverted:
        console.print(f"[yellow]not converted[/] {escape(failed.id)}: {escape(failed.problem)}")
    splits = ", ".join(f"{k} {n}" for k, n in report.splits.items()) or "none"
    missing = sum(len(m.trajectories) for m in report.missing) + len(report.unconverted)
    console.print(
        f"real corpus: {out}  ({len(report.built)} trajectories built: {splits}; {missing} "
        f"left out; see {out / BUILD_FILE})"
    )
    console.print(f"next: pos trapbench eval --real {out}")
