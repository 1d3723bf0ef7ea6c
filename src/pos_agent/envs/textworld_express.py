"""TextWorldExpress (`textworld-express` package, a Scala simulator run through py4j).

Tasks are the package's games; `cookingworld`, `twc` and `coin` have documented default
parameters below (the package's own defaults, written out so that runs are reproducible and
visible in the docs). `game_params` overrides any of them, as a dict or as the package's
`"key=value,key=value"` string. Seeds are the package's: train 0-999, dev 10000-10999,
test 20000-20999; without a seed the split's first seed is used. The gold path the simulator
generates is the expert.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pos_agent.envs._episode import BackendResult
from pos_agent.envs._jvm import JvmEnvironment, require_java, seed_in_split
from pos_agent.envs._types import EnvError, TaskSpec, choose_split

ENV_NAME = "textworld-express"
SPLITS = ("train", "dev", "test")
DEFAULT_SPLIT = "test"
DEFAULT_MAX_STEPS = 100

# The package's defaults for the three games of the paper (queried from textworld-express 1.1).
DEFAULT_GAME_PARAMS: dict[str, dict[str, int]] = {
    "cookingworld": {
        "numLocations": 11,
        "numIngredients": 3,
        "numDistractorItems": 10,
        "includeDoors": 1,
        "limitInventorySize": 1,
    },
    "twc": {
        "numLocations": 3,
        "numItemsToPutAway": 4,
        "includeDoors": 0,
        "limitInventorySize": 0,
    },
    "coin": {
        "numLocations": 11,
        "numDistractorItems": 0,
        "includeDoors": 1,
        "limitInventorySize": 1,
    },
}

GAME_DESCRIPTIONS = {
    "cookingworld": "Collect the ingredients of a recipe, prepare them, cook the meal and eat it.",
    "twc": "TextWorld Commonsense: put household objects back where they belong.",
    "coin": "Coin Collector: explore the house to find the coin and take it.",
}


def _import_twx() -> Any:
    try:
        import textworld_express
    except ImportError as exc:
        raise EnvError(
            "TextWorldExpress needs the `textworld-express` package: install the `envs` extra "
            "(`uv sync --extra envs`)."
        ) from exc
    return textworld_express


def known_games() -> list[str]:
    """Games the installed package offers (the three of the paper first)."""
    module = _import_twx()
    others = [g for g in module.GAME_NAMES if g not in DEFAULT_GAME_PARAMS]
    return [*DEFAULT_GAME_PARAMS, *others]


def list_twx_tasks(split: str | None) -> list[TaskSpec]:
    """cookingworld, twc and coin (instances are chosen with `seed`)."""
    chosen = choose_split(split, SPLITS, DEFAULT_SPLIT, "TextWorldExpress")
    return [
        TaskSpec(
            env=ENV_NAME,
            task_id=game,
            category=game,
            split=chosen,
            description=GAME_DESCRIPTIONS[game],
        )
        for game in DEFAULT_GAME_PARAMS
    ]


def format_game_params(params: Mapping[str, int]) -> str:
    """The package's `key=value,key=value` form."""
    return ",".join(f"{key}={value}" for key, value in params.items())


def parse_game_params(params: str | Mapping[str, Any] | None) -> dict[str, int]:
    """Accept a dict or a `key=value,...` string; values must be integers."""
    if params is None:
        return {}
    items: list[tuple[str, Any]]
    if isinstance(params, str):
        items = []
        for part in params.split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            if not sep:
                raise EnvError(
                    f"Bad game_params entry {part.strip()!r}: write key=value pairs "
                    "separated by commas, e.g. 'numLocations=3,includeDoors=0'."
                )
            items.append((key.strip(), value.strip()))
    else:
        items = list(params.items())
    parsed: dict[str, int] = {}
    for key, value in items:
        try:
            parsed[key] = int(value)
        except (TypeError, ValueError) as exc:
            raise EnvError(f"game_params {key}={value!r} is not an integer.") from exc
    return parsed


class TextWorldExpressEnvironment(JvmEnvironment):
    """One TextWorldExpress game instance (game + parameters + seed) behind the interface."""

    name: str = ENV_NAME

    def __init__(
        self,
        game: str,
        *,
        split: str | None = None,
        seed: int | None = None,
        max_steps: int | None = None,
        game_params: str | Mapping[str, Any] | None = None,
    ) -> None:
        game = game.strip().lower()
        games = known_games()
        if game not in games:
            raise EnvError(
                f"Unknown TextWorldExpress game {game!r}; use one of {', '.join(games)}."
            )
        super().__init__(
            task_id=game,
            max_steps=DEFAULT_MAX_STEPS if max_steps is None else max_steps,
            category=game,
            split=choose_split(split, SPLITS, DEFAULT_SPLIT, "TextWorldExpress"),
        )
        require_java(ENV_NAME)
        self.game_params = {**DEFAULT_GAME_PARAMS.get(game, {}), **parse_game_params(game_params)}
        self._valid: list[str] = []
        with self._starting():
            self._load()
            self.seed = self._choose_seed(seed)

    def _start_backend(self) -> Any:
        module = _import_twx()
        # The simulator's own step limit is disabled: the budget is enforced here.
        return module.TextWorldExpressEnv(envStepLimit=10**9)

    def _load(self) -> None:
        try:
            self._backend.load(self.task_id, format_game_params(self.game_params))
        except ValueError as exc:
            raise EnvError(
                f"TextWorldExpress rejected the parameters of {self.task_id!r}: {exc}"
            ) from exc

    def _choose_seed(self, seed: int | None) -> int:
        getter = {
            "train": self._backend.getValidSeedsTrain,
            "dev": self._backend.getValidSeedsDev,
            "test": self._backend.getValidSeedsTest,
        }[self.split]
        return seed_in_split(
            seed,
            getter(),
            lambda seeds: (
                f"Seed {seed} is not in the TextWorldExpress {self.split} split; "
                f"choose one of {seeds[0]}-{seeds[-1]}."
            ),
        )

    def _extra(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "game_params": dict(self.game_params),
            "expert_on_gold_path": self._on_gold_path,
        }

    def _backend_reset(self) -> BackendResult:
        observation, infos = self._backend.reset(
            seed=self.seed, gameFold=self.split, generateGoldPath=True
        )
        self._gold = [str(a) for a in self._backend.getGoldActionSequence()]
        self._gold_position = 0
        self._on_gold_path = True
        self._valid = [str(a) for a in infos["validActions"]]
        self.goal = str(infos["taskDescription"]).strip()
        return BackendResult(
            text=f"{self.goal}\n\n{observation}",
            admissible_actions=list(self._valid),
            score=float(infos["score"]),
            expert_action=self._expert_action(),
            extra=self._extra(),
        )

    def _backend_step(self, action: str) -> BackendResult:
        # The simulator's valid-action list is exhaustive: anything else cannot parse, so it is
        # answered here without touching the game state.
        if action not in self._valid:
            return self.invalid_result(
                f"Unknown action: I'm not sure what you mean. Invalid action {action!r}: "
                "choose one of the valid actions."
            )
        observation, _, _, infos = self._backend.step(action)
        if self._on_gold_path and action == self._expert_action():
            self._gold_position += 1
        else:
            self._on_gold_path = False
        self._valid = [str(a) for a in infos["validActions"]]
        success = bool(infos["tasksuccess"])
        return BackendResult(
            text=str(observation),
            admissible_actions=list(self._valid),
            done=success or bool(infos["taskfailure"]),
            success=success,
            score=float(infos["score"]),
            expert_action=self._expert_action(),
            extra=self._extra(),
        )
