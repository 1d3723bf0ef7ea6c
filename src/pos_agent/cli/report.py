"""`pos report` (the paper's tables and plots from run folders) and `pos view` (one trace as HTML)."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated

import typer

from pos_agent.cli.app import app
from pos_agent.llm import printable


@app.command()
def report(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(help="Run folders (runs/<run>), folders of runs, or case folders."),
    ],
    out: Annotated[
        Path | None,
        typer.Option(help="Where to write report.md, CSVs and PNGs (default: RUN_DIR/report)."),
    ] = None,
    context_field: Annotated[
        str,
        typer.Option(help="Field of result.extra to plot success against (Figure 4); a.b nests."),
    ] = "context_length",
    split_runs: Annotated[
        bool, typer.Option(help="Treat each run as its own method (compare configurations).")
    ] = False,
    plots: Annotated[bool, typer.Option(help="Write PNG plots (matplotlib).")] = True,
    price_table: Annotated[
        Path | None,
        typer.Option(
            help="A price table (YAML: input, cached input, cache write and output price per "
            "model) over the shipped examples: adds Table 2 in billed tokens and cost."
        ),
    ] = None,
    paper: Annotated[
        bool,
        typer.Option(
            help="The paper's layout (a `pos paper` run): Tables 1, 2 and 9 and Figures 1, 3 "
            "and 4 with the published values, 95% intervals, a paired test and footnotes "
            "(paper.md, CSV, LaTeX, PNG)."
        ),
    ] = False,
) -> None:
    """Success, tokens per role, trapping and context-length tables, methods side by side.

    Several runs (the shards of `pos bench --shard I/N`, or runs of different methods) are
    pooled into one row per method; runs where a method has other settings, or that hold the
    same case, are refused with what differs (--split-runs shows each run on its own).

    Example: pos report runs/alfworld-mini-20250101 --out report/
    Example: pos report runs/sweep-shard1of4 runs/sweep-shard2of4 ... --out report/
    """
    from pos_agent.bench.report import ReportError, write_report
    from pos_agent.cost import load_prices

    target = out if out is not None else _default_report_dir(run_dirs)
    if paper:
        _paper_report(run_dirs, target, plots=plots)
        return
    try:
        prices = load_prices(price_table) if price_table is not None else None
    except (OSError, ValueError) as exc:
        typer.echo(f"error: price table: {printable(exc)}", err=True)
        raise typer.Exit(1) from None
    try:
        written = write_report(
            run_dirs,
            target,
            context_field=context_field,
            split_runs=split_runs,
            plots=plots,
            prices=prices,
        )
    except ReportError as exc:
        typer.echo(f"error: {printable(exc)}", err=True)
        raise typer.Exit(1) from None
    except OSError as exc:
        typer.echo(f"error: cannot read the runs or write the report: {printable(exc)}", err=True)
        raise typer.Exit(1) from None
    typer.echo(printable(written.markdown))
    typer.echo(f"report: {written.markdown_path}")
    typer.echo("tables: " + ", ".join(str(p) for p in written.csv_paths))
    if written.plot_paths:
        typer.echo("plots: " + ", ".join(str(p) for p in written.plot_paths))


def _paper_report(run_dirs: list[Path], target: Path, *, plots: bool) -> None:
    from pos_agent.bench.report import ReportError
    from pos_agent.bench.report.paper import write_paper_report

    try:
        written = write_paper_report(run_dirs, target, plots=plots)
    except ReportError as exc:
        typer.echo(f"error: {printable(exc)}", err=True)
        raise typer.Exit(1) from None
    typer.echo(printable(written.markdown))
    typer.echo(f"report: {written.markdown_path}")
    typer.echo("tables: " + ", ".join(str(p) for p in [*written.csv_paths, *written.latex_paths]))
    if written.plot_paths:
        typer.echo("plots: " + ", ".join(str(p) for p in written.plot_paths))


@app.command()
def view(
    trace_dir: Annotated[
        Path, typer.Argument(help="A case folder runs/<run>/<case> (or a run with one case).")
    ],
    out: Annotated[
        Path | None, typer.Option(help="HTML file to write (default: TRACE_DIR/trace.html).")
    ] = None,
    open_page: Annotated[
        bool, typer.Option("--open", help="Open the page in the default browser.")
    ] = False,
) -> None:
    """Render one trace as a self-contained HTML page (no network needed to view it).

    Example: pos view runs/<run>/alfworld-mini__heat-mug --open
    """
    from pos_agent.bench.view import TraceNotFoundError, write_view

    try:
        path = write_view(trace_dir, out)
    except TraceNotFoundError as exc:
        typer.echo(f"error: {printable(exc)}", err=True)
        raise typer.Exit(1) from None
    except OSError as exc:
        typer.echo(f"error: cannot read or write the trace: {printable(exc)}", err=True)
        raise typer.Exit(1) from None
    except UnicodeDecodeError as exc:
        typer.echo(
            f"error: the trace in {trace_dir} is not UTF-8 text (byte {exc.start}: "
            f"{exc.object[exc.start : exc.start + 1]!r}); PoS writes UTF-8, so this file was "
            "damaged or written by something else",
            err=True,
        )
        raise typer.Exit(1) from None
    typer.echo(str(path))
    if open_page:
        webbrowser.open(path.resolve().as_uri())


def _default_report_dir(run_dirs: list[Path]) -> Path:
    return run_dirs[0] / "report" if len(run_dirs) == 1 else Path("report")
