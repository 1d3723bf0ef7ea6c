"""`make`: generate the games and play their trajectories into a corpus folder, resumably.

Each game (one seed of a slot) is one task, `build_game`, run in a worker process of a
`pool.WorkerPool`: generate (or reuse) the game files, play the walkthrough and the injected
runs within the search bounds, and return the trajectories. A skipped seed makes the parent queue
the slot's next replacement seed. The parent writes `trajectories/<slot>.jsonl` and the manifest
atomically as each slot settles, so an interrupted `make` loses at most the games in flight and
a rerun skips every finished slot. A game whose worker dies or goes over the time or memory
limit fails: its slot has no trajectory file, the manifest says why, and the build goes on.
`corpus.jsonl` is written last, from the per-slot files, and only when every slot is settled
and none failed.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pos_agent.trace import write_text_atomic
from pos_trapbench.games import (
    GameGenerationError,
    GameSpec,
    game_files,
    game_specs,
    make_game,
    replacement_spec,
)
from pos_trapbench.pool import (
    Limits,
    MemoryBoundExceeded,
    Running,
    TaskResult,
    WorkerPeak,
    WorkerPool,
)
from pos_trapbench.records import (
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
class GameOutcome:
    """What building one game (one seed) gave: its manifest entry, and its trajectories when it
    is used."""

    entry: GameEntry
    trajectories: list[Trajectory]


@dataclass(frozen=True, slots=True)
class SlotResult:
    """How one game slot settled: the game used, given up after every replacement, or failed
    (its worker died or went over a limit; the slot is built again on the next run)."""

    slot: str
    trajectories: list[Trajectory]
    entries: list[GameEntry]
    """Every seed tried for the slot: the used, given-up or failed one last, skipped ones with
    their reasons."""

    @property
    def failed(self) -> bool:
        return bool(self.entries) and self.entries[-1].status == "failed"


def corpus_paths(out: Path) -> tuple[Path, Path, Path]:
    """(games folder, trajectories folder, corpus file) of a corpus folder."""
    return out / "games", out / "trajectories", out / CORPUS_FILE


def build_game(spec: GameSpec, out: Path) -> GameOutcome:
    """The task of one game: generate (or reuse) it in `out/games` and play its trajectories,
    every search within its bound. A game that cannot give a corpus within them is skipped,
    with the reason in its entry, and its files are deleted.

    It runs in a worker process (see `pool.py`); a worker memory guard may raise
    `MemoryBoundExceeded` anywhere inside, which skips the game like any other bound."""
    from pos_trapbench.build import UnusableGame, play_game
    from pos_trapbench.session import (
        GameError,
        GameSession,
        SearchLimit,
        bounded_plan_tracking,
    )

    games, _, _ = corpus_paths(out)
    entry = GameEntry(
        id=spec.id, family=spec.family, seed=spec.seed, command=spec.command, status="skipped"
    )
    try:
        z8 = make_game(spec, games)
        session = GameSession(z8)
        try:
            with bounded_plan_tracking():
                trajectories = play_game(
                    session,
                    game_id=spec.id,
                    game=f"games/{z8.name}",
                    family=spec.family,
                    seed=spec.seed,
                )
        finally:
            session.close()
    except (GameGenerationError, UnusableGame, GameError, SearchLimit, MemoryBoundExceeded) as exc:
        entry.reason = str(exc)
    except Exception as exc:
        # A failure in TextWorld or Jericho on one seed must not stop the whole corpus; the
        # manifest keeps what happened and the slot moves on to the next seed.
        entry.reason = f"unexpected {type(exc).__name__}: {exc}"
    else:
        entry.status = "used"
        entry.trajectories = len(trajectories)
        entry.steps = sum(len(t.steps) for t in trajectories)
        return GameOutcome(entry, trajectories)
    for path in game_files(games, spec):
        path.unlink(missing_ok=True)
    return GameOutcome(entry, [])


GameTask = Callable[[GameSpec, Path], GameOutcome]
"""What a worker runs for one game: a module-level function (it is pickled by name)."""


class CorpusMaker:
    """Builds a corpus folder for `games` game slots drawn from `seed`.

    Every game is built by `task` in a worker process (`pool.py`), even with one worker, so that
    a game that dies or goes over `limits` ends as failed and the build goes on."""

    def __init__(
        self,
        out: Path,
        games: int,
        seed: int,
        workers: int = 2,
        *,
        limits: Limits | None = None,
        task: GameTask = build_game,
    ) -> None:
        self.out = out
        self.specs = game_specs(games, seed)
        self.workers = max(1, workers)
        self.limits = limits or Limits()
        self.task = task
        self.games_dir, self.trajectories_dir, self.corpus_file = corpus_paths(out)
        self.manifest = self._load_manifest(games, seed)
        self.failed: list[SlotResult] = []
        """Slots whose last run failed (no trajectory file: the next run builds them again)."""
        self.peaks: dict[int, WorkerPeak] = {}
        """Peak resident memory per worker position over the last run, and the game at it."""

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

        from pos_trapbench.games import MAX_QUEST_NODES
        from pos_trapbench.segments import MAX_MOVES
        from pos_trapbench.session import MAX_PLAN_ACTIONS

        return Manifest(
            seed=seed,
            games_requested=games,
            textworld=textworld.__version__,
            settings={
                "families": ["tw-cooking", "custom"],
                "max_replacements": MAX_REPLACEMENTS,
                "search_bounds": {
                    "quest_nodes": MAX_QUEST_NODES,
                    "plan_actions": MAX_PLAN_ACTIONS,
                    "moves": MAX_MOVES,
                    "memory_mb": self.limits.memory_mb,
                },
            },
        )

    def pending(self) -> list[GameSpec]:
        """Game slots without a finished trajectory file."""
        return [s for s in self.specs if not self._slot_file(s.id).is_file()]

    def _slot_file(self, slot: str) -> Path:
        return self.trajectories_dir / f"{slot}.jsonl"

    def run(
        self,
        on_slot: Callable[[SlotResult], None] | None = None,
        on_progress: Callable[[list[Running]], None] | None = None,
    ) -> Path | None:
        """Build every pending slot, then write the corpus file and return its path; None when
        some slot failed (see `failed`): the finished ones are kept for the next run."""
        todo = self.pending()
        if todo:
            self.corpus_file.unlink(missing_ok=True)  # it is stale as soon as a slot is redone
        self.failed = []
        tried: dict[str, list[GameEntry]] = {spec.id: [] for spec in todo}
        attempts: dict[str, tuple[GameSpec, GameSpec, int]] = {}
        """task key -> (the slot's spec, the spec tried, its replacement number)."""
        with WorkerPool(self.workers, self.limits) as pool:
            for spec in todo:
                attempts[spec.id] = (spec, spec, 0)
                pool.submit(spec.id, self.task, spec, self.out)
            try:
                for done in pool.results(on_tick=on_progress):
                    slot, current, number = attempts.pop(done.key)
                    entries = tried[slot.id]
                    settled = self._settle(done, current, entries)
                    if settled is not None:
                        self._record(SlotResult(slot.id, settled, entries), on_slot)
                    elif number < MAX_REPLACEMENTS:
                        following = replacement_spec(slot, number + 1)
                        attempts[following.id] = (slot, following, number + 1)
                        # Replacements first: a slot in progress is finished before new ones.
                        pool.submit(following.id, self.task, following, self.out, first=True)
                    else:
                        self._record(SlotResult(slot.id, [], entries), on_slot)
            finally:
                self.peaks = dict(pool.peaks)
        if self.failed:
            return None
        return self._write_corpus()

    def _settle(
        self, done: TaskResult, spec: GameSpec, entries: list[GameEntry]
    ) -> list[Trajectory] | None:
        """Add the game's entry to `entries`; its trajectories when the slot is settled (used,
        or failed: an empty list), None when the seed was skipped."""
        if not done.ok:
            reason = (done.error or "").strip().splitlines()[0] if done.error else "failed"
            entries.append(
                GameEntry(
                    id=spec.id,
                    family=spec.family,
                    seed=spec.seed,
                    command=spec.command,
                    status="failed",
                    reason=f"{reason} (after {done.seconds:.0f} s)",
                )
            )
            return []
        outcome: GameOutcome = done.value
        entries.append(outcome.entry)
        return outcome.trajectories if outcome.entry.status == "used" else None

    def _record(self, result: SlotResult, on_slot: Callable[[SlotResult], None] | None) -> None:
        if result.failed:
            self.failed.append(result)
        else:
            write_text_atomic(self._slot_file(result.slot), dump_trajectories(result.trajectories))
        # The slot's entries of an earlier run (a failed one, say) give way to this run's.
        self.manifest.games = [g for g in self.manifest.games if slot_of(g.id) != result.slot]
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


def slot_of(game_id: str) -> str:
    """The slot a game id belongs to (`quest-011~2` -> `quest-011`)."""
    return game_id.split("~")[0]


def remove_scratch(out: Path) -> None:
    """Delete half-compiled game folders an interrupted run may have left."""
    games, _, _ = corpus_paths(out)
    if games.is_dir():
        for scratch in games.glob(".*"):
            if scratch.is_dir():
                shutil.rmtree(scratch, ignore_errors=True)
