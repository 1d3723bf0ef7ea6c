"""Generating the corpus's TextWorld games, offline, exactly as `tw-make` would.

Two families (the settings of the comparable loop-detection study docs/trapbench.md cites):

- `tw-cooking`: recipe 2, take 2, go 6, open, cook, cut;
- `custom`: world size 8, 12 objects, quest length 10.

The games are built through TextWorld's Python API with the options `tw-make` sets, so
`GameSpec.command` is the `tw-make` line that regenerates the same game (same world, quests
and walkthrough; tw-make also stores its command-line arguments in the game's metadata). Each game is compiled
into a scratch folder and then moved into place, so a folder never holds half a game.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pos_trapbench.records import GameFamily

COOKING_SETTINGS: dict[str, Any] = {
    "recipe": 2,
    "take": 2,
    "go": 6,
    "open": True,
    "cook": True,
    "cut": True,
    "drop": False,
    "split": None,
}
CUSTOM_WORLD_SIZE = 8
CUSTOM_OBJECTS = 12
CUSTOM_QUEST_LENGTH = 10
MAX_QUEST_NODES = 10_000
"""Bound on the chain nodes TextWorld's quest search expands for one game (tens normally)."""


class GameGenerationError(RuntimeError):
    """TextWorld could not make a game for this seed (e.g. no quest of the asked length)."""


@dataclass(frozen=True, slots=True)
class GameSpec:
    """One game to generate."""

    id: str
    family: GameFamily
    seed: int

    @property
    def command(self) -> str:
        """The `tw-make` command that generates this game."""
        output = f"games/{self.id}.z8"
        if self.family == "tw-cooking":
            flags = " ".join(
                f"--{name}" for name in ("open", "cook", "cut") if COOKING_SETTINGS[name]
            )
            return (
                f"tw-make tw-cooking --recipe {COOKING_SETTINGS['recipe']} "
                f"--take {COOKING_SETTINGS['take']} --go {COOKING_SETTINGS['go']} {flags} "
                f"--recipe-seed {self.seed} --seed {self.seed} --output {output} -f --silent"
            )
        return (
            f"tw-make custom --world-size {CUSTOM_WORLD_SIZE} --nb-objects {CUSTOM_OBJECTS} "
            f"--quest-length {CUSTOM_QUEST_LENGTH} --seed {self.seed} --output {output} -f --silent"
        )


def game_specs(count: int, seed: int) -> list[GameSpec]:
    """`count` games, alternating families, with seeds drawn from `seed`; replacements for
    games that cannot be used come from `replacement_spec`."""
    rng = random.Random(seed)
    specs = []
    for index in range(count):
        family: GameFamily = "tw-cooking" if index % 2 == 0 else "custom"
        specs.append(_spec(family, index, rng.randrange(1, 65_000)))
    return specs


def replacement_spec(spec: GameSpec, attempt: int) -> GameSpec:
    """The game that stands in for `spec` after `attempt` unusable ones (deterministic)."""
    rng = random.Random(f"{spec.id}:{spec.seed}:{attempt}")
    return GameSpec(f"{spec.id.split('~')[0]}~{attempt}", spec.family, rng.randrange(1, 65_000))


def _spec(family: GameFamily, index: int, seed: int) -> GameSpec:
    prefix = "cook" if family == "tw-cooking" else "quest"
    return GameSpec(f"{prefix}-{index:03d}", family, seed)


def game_files(folder: Path, spec: GameSpec) -> tuple[Path, Path]:
    """The compiled game (.z8) and its metadata (.json) inside `folder`."""
    return folder / f"{spec.id}.z8", folder / f"{spec.id}.json"


def make_game(spec: GameSpec, folder: Path) -> Path:
    """Generate and compile `spec` into `folder` (reused when both files are there)."""
    z8, metadata = game_files(folder, spec)
    if z8.is_file() and metadata.is_file():
        return z8
    import textworld
    from textworld.generator import QuestGenerationError, compile_game

    folder.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=folder, prefix=f".{spec.id}."))
    try:
        options = textworld.GameOptions()
        options.seeds = spec.seed
        options.path = str(scratch / f"{spec.id}.z8")
        options.file_ext = ".z8"
        options.force_recompile = True
        try:
            with bounded_quest_search():
                game = _generate(spec, options)
            built = Path(compile_game(game, options))
        except (QuestGenerationError, ValueError, AssertionError) as exc:
            raise GameGenerationError(f"{spec.command}: {type(exc).__name__}: {exc}") from exc
        # The metadata first: a .z8 without its .json would look like a finished game.
        os.replace(built.with_suffix(".json"), metadata)
        os.replace(built, z8)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return z8


def _generate(spec: GameSpec, options: Any) -> Any:
    """The `textworld.Game` of `spec`, with the options `tw-make` sets."""
    import textworld
    import textworld.challenges

    if spec.family == "tw-cooking":
        _, make_cooking, _ = textworld.challenges.CHALLENGES["tw-cooking"]
        settings = {**COOKING_SETTINGS, "recipe_seed": spec.seed}
        return make_cooking(settings=settings, options=options)
    options.nb_rooms = CUSTOM_WORLD_SIZE
    options.nb_objects = CUSTOM_OBJECTS
    # tw-make's own defaults (its --quest-*-breadth and --quest-min-depth), which
    # differ from GameOptions' defaults; then what --quest-length sets.
    options.chaining.min_breadth = 1
    options.chaining.max_breadth = 5
    options.chaining.min_depth = 1
    options.chaining.min_length = CUSTOM_QUEST_LENGTH
    options.chaining.max_length = CUSTOM_QUEST_LENGTH
    options.chaining.max_depth = CUSTOM_QUEST_LENGTH
    return textworld.generator.make_game(options)


@contextmanager
def bounded_quest_search(limit: int = MAX_QUEST_NODES) -> Iterator[None]:
    """While inside, TextWorld's quest search raises `GameGenerationError` once it has expanded
    `limit` chain nodes: its depth-first search is exhaustive when no quest of the asked length
    exists, which can take exponential time. A search within the bound is unchanged."""
    from textworld.generator import chaining

    original = chaining._Chainer.chain
    expanded = 0

    def chain(chainer: Any, node: Any) -> Any:
        nonlocal expanded
        expanded += 1
        if expanded > limit:
            raise GameGenerationError(
                f"search bound: TextWorld's quest search expanded more than {limit} nodes"
            )
        return original(chainer, node)

    chaining._Chainer.chain = chain
    try:
        yield
    finally:
        chaining._Chainer.chain = original
