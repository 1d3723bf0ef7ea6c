"""`make`: generate the games and play their trajectories into a corpus folder, resumably.

Each game is handled whole by one worker process: generate (or reuse) the game files, play the
walkthrough and the injected runs, and return the trajectories. The parent writes
`trajectories/<game>.jsonl` and the manifest atomically after each game, so an interrupted
`make` loses at most the games in flight and a rerun skips every finished game. `corpus.jsonl`
is written last, from the per-game files, and only when every game slot is settled.
"""

from __future__ import annotations

import multiprocessing
import shutil
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pos_agent.trace import write_text_atomic
from pos_agent.trapbench.games import (
    GameGenerationError,
    GameSpec,
    game_files,
    game_specs,
    make_game,
    replacement_spec,
)
from pos_agent.trapbench.records import (
    GameEntry,
    Manifest,
    Trajectory,
    dump_trajectories,
    load_trajectories,
)

MAX_REPLACEMENTS = 6
"""Unusable seeds replaced per game slot before the slot is given up."""
CORPUS_FILE = "corpus.jsonl"
MANIFEST_FILE = "manifest.json"


@dataclass(frozen=True, slots=True)
class SlotResult:
    """What one worker returns for one game slot."""

    slot: str
    trajectories: list[Trajectory]
    entries: list[GameEntry]
    """Every seed tried for the slot: the used one last, skipped ones with their reasons."""


def corpus_paths(out: Path) -> tuple[Path, Path, Path]:
    """(games folder, trajectories folder, corpus file) of a corpus folder."""
    return out / "games", out / "trajectories", out / CORPUS_FILE


def build_slot(spec: GameSpec, out: Path) -> SlotResult:
    """Generate and play one game slot, replacing seeds that give unusable games."""
    from pos_agent.trapbench.build import UnusableGame, play_game
    from pos_agent.trapbench.session import GameError, GameSession

    games, _, _ = corpus_paths(out)
    entries: list[GameEntry] = []
    current = spec
    for attempt in range(MAX_REPLACEMENTS + 1):
        if attempt:
            current = replacement_spec(spec, attempt)
        entry = GameEntry(
            id=current.id,
            family=current.family,
            seed=current.seed,
            command=current.command,
            status="skipped",
        )
        entries.append(entry)
        try:
            z8 = make_game(current, games)
            session = GameSession(z8)
            try:
                trajectories = play_game(
                    session,
                    game_id=current.id,
                    game=f"games/{z8.name}",
                    family=current.family,
                    seed=current.seed,
                )
            finally:
                session.close()
        except (GameGenerationError, UnusableGame, GameError) as exc:
            entry.reason = str(exc)
        except Exception as exc:
            # A failure in TextWorld or Jericho on one seed must not stop the whole corpus; the
            # manifest keeps what happened and the slot moves on to the next seed.
            entry.reason = f"unexpected {type(exc).__name__}: {exc}"
        else:
            entry.status = "used"
            entry.trajectories = len(trajectories)
            entry.steps = sum(len(t.steps) for t in trajectories)
            return SlotResult(spec.id, trajectories, entries)
        for path in game_files(games, current):
            path.unlink(missing_ok=True)
    return SlotResult(spec.id, [], entries)


def _build_slot_star(arguments: tuple[GameSpec, Path]) -> SlotResult:
    return build_slot(*arguments)


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class CorpusMaker:
    """Builds a corpus folder for `games` game slots drawn from `seed`."""

    def __init__(self, out: Path, games: int, seed: int, workers: int = 2) -> None:
        self.out = out
        self.specs = game_specs(games, seed)
        self.workers = max(1, workers)
        self.games_dir, self.trajectories_dir, self.corpus_file = corpus_paths(out)
        self.manifest = self._load_manifest(games, seed)

    def _load_manifest(self, games: int, seed: int) -> Manifest:
        path = self.out / MANIFEST_FILE
        if path.is_file():
            manifest = Manifest.model_validate_json(path.read_text(encoding="utf-8"))
            if manifest.seed != seed or manifest.games_requested != games:
                raise ValueError(
                    f"{self.out} holds a corpus made with --games {manifest.games_requested} "
                    f"--seed {manifest.seed}; use another --out folder or the same settings"
                )
            return manifest
        import textworld

        return Manifest(
            seed=seed,
            games_requested=games,
            textworld=textworld.__version__,
            settings={"families": ["tw-cooking", "custom"], "max_replacements": MAX_REPLACEMENTS},
        )

    def pending(self) -> list[GameSpec]:
        """Game slots without a finished trajectory file."""
        return [s for s in self.specs if not self._slot_file(s.id).is_file()]

    def _slot_file(self, slot: str) -> Path:
        return self.trajectories_dir / f"{slot}.jsonl"

    def run(self, on_slot: Callable[[SlotResult], None] | None = None) -> Path:
        """Build every pending slot, then write the corpus file; returns its path."""
        todo = self.pending()
        if todo:
            self.corpus_file.unlink(missing_ok=True)  # it is stale as soon as a slot is redone
        if self.workers == 1 or len(todo) <= 1:
            for spec in todo:
                self._record(build_slot(spec, self.out), on_slot)
        else:
            self._run_parallel(todo, on_slot)
        return self._write_corpus()

    def _run_parallel(
        self, todo: list[GameSpec], on_slot: Callable[[SlotResult], None] | None
    ) -> None:
        context = multiprocessing.get_context("spawn")
        # Workers ignore Ctrl-C: the parent owns the corpus and, on Ctrl-C, stops them itself;
        # the games they were building are lost, the finished ones are already on disk.
        pool = context.Pool(self.workers, initializer=_ignore_interrupts)
        try:
            for result in pool.imap_unordered(_build_slot_star, [(s, self.out) for s in todo]):
                self._record(result, on_slot)
        except BaseException:
            pool.terminate()
            pool.join()
            raise
        pool.close()
        pool.join()

    def _record(self, result: SlotResult, on_slot: Callable[[SlotResult], None] | None) -> None:
        write_text_atomic(self._slot_file(result.slot), dump_trajectories(result.trajectories))
        tried = {e.id for e in result.entries}
        self.manifest.games = [g for g in self.manifest.games if g.id not in tried]
        self.manifest.games += result.entries
        self.manifest.games.sort(key=lambda g: g.id)
        write_text_atomic(self.out / MANIFEST_FILE, self.manifest.model_dump_json(indent=2) + "\n")
        if on_slot is not None:
            on_slot(result)

    def _write_corpus(self) -> Path:
        trajectories: list[Trajectory] = []
        for spec in self.specs:
            trajectories += load_trajectories(self._slot_file(spec.id))
        write_text_atomic(self.corpus_file, dump_trajectories(trajectories))
        return self.corpus_file


def remove_scratch(out: Path) -> None:
    """Delete half-compiled game folders an interrupted run may have left."""
    games, _, _ = corpus_paths(out)
    if games.is_dir():
        for scratch in games.glob(".*"):
            if scratch.is_dir():
                shutil.rmtree(scratch, ignore_errors=True)
