"""ALFWorld through the `alfworld` package's TextWorld (PDDL) engine, and the offline mini suite.

Both suites run in the same engine the ALFWorld benchmark uses: TextWorld's `PddlEnv` with
ALFWorld's `alfred.pddl` domain and `alfred.twl2` grammar, wrapped by ALFWorld's own
`AlfredDemangler` (which turns ids like `Mug_bar_1` into "mug 1"). The expert is the engine's
planner expert: `info["expert_action"]` is the first command of the plan Fast Downward finds
from the current state (what ALFWorld calls the `planner` expert type).

- `alfworld`: the official games, after `pos data get alfworld` (or `alfworld-download`) has
  put them under its folder (`$ALFWORLD_DATA` overrides it): splits `train`, `valid_seen` and
  `valid_unseen` (134 games), filtered exactly as ALFWorld's `AlfredTWEnv` does.
- `alfworld-mini`: tasks this project authored as ALFWorld PDDL problems
  (`data/alfworld_mini/<task>/initial_state.pddl` + `traj_data.json`, ALFWorld's layout), so
  the suite runs with no download. Its only split is `test`.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pos_agent.data import dataset_dir, prepared
from pos_agent.envs import _pddl_cache as pddl_cache
from pos_agent.envs._episode import BackendResult, BudgetedEnvironment
from pos_agent.envs._types import EnvError, TaskSpec, choose_split

OFFICIAL_ENV = "alfworld"
MINI_ENV = "alfworld-mini"
OFFICIAL_SPLITS = ("train", "valid_seen", "valid_unseen")
OFFICIAL_DEFAULT_SPLIT = "valid_unseen"
MINI_SPLIT = "test"
DEFAULT_MAX_STEPS = 50
# The folder `alfworld-download` unpacks the game files into.
OFFICIAL_DATA_FOLDER = "json_2.1.1"

# ALFWorld's six task types and the paper's categories (Table 5).
TASK_CATEGORIES = {
    "pick_and_place_simple": "Place",
    "pick_two_obj_and_place": "Place",
    "pick_clean_then_place_in_recep": "Transform",
    "pick_heat_then_place_in_recep": "Transform",
    "pick_cool_then_place_in_recep": "Transform",
    "look_at_obj_in_light": "Inspect",
}

_BANNER = "-= Welcome to TextWorld, ALFRED! =-"
_TASK_PREFIX = "Your task is to:"
_NOTHING_HAPPENS = "Nothing happens."


@dataclass(frozen=True)
class AlfWorldGame:
    """One ALFWorld game: where it comes from and how to build its TextWorld game data."""

    env: str
    task_id: str
    split: str
    task_type: str
    description: str
    folder: Path

    @property
    def category(self) -> str:
        return TASK_CATEGORIES[self.task_type]

    def game_data(self) -> dict[str, Any]:
        """The `game.tw-pddl` content: PDDL domain, grammar (with the goal) and problem."""
        game_file = self.folder / "game.tw-pddl"
        if game_file.is_file():
            data: dict[str, Any] = json.loads(game_file.read_text())
            return data
        return build_game_data(self.folder)


# -- the game files --------------------------------------------------------------------------


def _alfworld_logic() -> tuple[str, str]:
    """ALFWorld's PDDL domain and text grammar, as shipped inside the `alfworld` package."""
    try:
        import alfworld
    except ImportError as exc:
        raise EnvError(
            "ALFWorld needs the `alfworld` package: install the `envs` extra "
            "(`uv sync --extra envs`)."
        ) from exc
    data = Path(alfworld.__file__).parent / "data"
    return (data / "alfred.pddl").read_text(), (data / "alfred.twl2").read_text()


def build_game_data(folder: Path) -> dict[str, Any]:
    """What `alfworld-generate` writes to `game.tw-pddl`, built in memory from a task folder."""
    traj = json.loads((folder / "traj_data.json").read_text())
    domain, grammar = _alfworld_logic()
    return {
        "pddl_domain": domain,
        "grammar": grammar.replace("UNKNOWN GOAL", traj["task_desc"]),
        "pddl_problem": (folder / "initial_state.pddl").read_text(),
        "solvable": True,
    }


def mini_data_dir() -> Path:
    """Where the alfworld-mini task folders are shipped inside the package."""
    return Path(str(resources.files("pos_agent.envs") / "data" / "alfworld_mini"))


@functools.cache
def _mini_games() -> tuple[AlfWorldGame, ...]:
    games = []
    for folder in sorted(mini_data_dir().iterdir()):
        traj_file = folder / "traj_data.json"
        if not traj_file.is_file():
            continue
        traj = json.loads(traj_file.read_text())
        games.append(
            AlfWorldGame(
                env=MINI_ENV,
                task_id=folder.name,
                split=MINI_SPLIT,
                task_type=traj["task_type"],
                description=traj.get("description", traj["task_desc"]),
                folder=folder,
            )
        )
    return tuple(games)


def alfworld_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where the official games are: `$ALFWORLD_DATA` when it holds them, else the folder
    `pos data get alfworld` prepared, else ALFWorld's own default (`$ALFWORLD_DATA` or
    `~/.cache/alfworld`, where `alfworld-download` puts them)."""
    environ = os.environ if environ is None else environ
    chosen = environ.get("ALFWORLD_DATA")
    # `import alfworld` sets ALFWORLD_DATA to its default, so a set variable alone does not
    # mean the user chose it: it wins only when it holds the games.
    if chosen and (Path(chosen).expanduser() / OFFICIAL_DATA_FOLDER).is_dir():
        return Path(chosen).expanduser()
    ready = prepared(OFFICIAL_ENV)
    if ready is not None:
        return ready
    return Path(chosen or "~/.cache/alfworld").expanduser()


def _missing_data_message(data_dir: Path, split: str) -> str:
    return (
        f"ALFWorld game files for split {split!r} were not found under {data_dir} "
        f"(expected {OFFICIAL_DATA_FOLDER}/{split}/<task>/<trial>/game.tw-pddl). "
        f"Get them with `pos data get {OFFICIAL_ENV}` (into {dataset_dir(OFFICIAL_ENV)}; "
        "`--from PATH` takes a folder with the release archives), or run `alfworld-download`, "
        f"or set ALFWORLD_DATA to the folder that contains {OFFICIAL_DATA_FOLDER}/. To run "
        f"offline, use the `{MINI_ENV}` environment."
    )


def _is_playable(folder: Path, supported: set[str]) -> str | None:
    """The game's task type when ALFWorld's TextWorld env would load it, else None."""
    relative = str(folder)
    if "movable" in relative or "Sliced" in relative:
        return None
    game_file = folder / "game.tw-pddl"
    if not game_file.is_file():
        return None
    try:
        traj = json.loads((folder / "traj_data.json").read_text())
        solvable = json.loads(game_file.read_text()).get("solvable")
    except (OSError, ValueError):
        return None
    task_type = traj.get("task_type")
    if task_type not in supported or not solvable:
        return None
    return str(task_type)


@functools.cache
def _official_games(data_dir: Path, split: str) -> tuple[AlfWorldGame, ...]:
    split_dir = data_dir / OFFICIAL_DATA_FOLDER / split
    if not split_dir.is_dir():
        raise EnvError(_missing_data_message(data_dir, split))
    supported = set(TASK_CATEGORIES)
    games = []
    for traj_file in sorted(split_dir.rglob("traj_data.json")):
        folder = traj_file.parent
        task_type = _is_playable(folder, supported)
        if task_type is None:
            continue
        task_id = folder.relative_to(split_dir).as_posix()
        games.append(
            AlfWorldGame(
                env=OFFICIAL_ENV,
                task_id=task_id,
                split=split,
                task_type=task_type,
                description=task_id.split("/", 1)[0],
                folder=folder,
            )
        )
    if not games:
        raise EnvError(_missing_data_message(data_dir, split))
    return tuple(games)


def _check_mini_split(split: str | None) -> str:
    if split not in (None, MINI_SPLIT):
        raise EnvError(f"{MINI_ENV} has a single split, {MINI_SPLIT!r} (got {split!r}).")
    return MINI_SPLIT


def official_games(split: str | None = None) -> list[AlfWorldGame]:
    """The official games of a split; raises EnvError naming `alfworld-download` if missing."""
    return list(
        _official_games(
            alfworld_data_dir(),
            choose_split(split, OFFICIAL_SPLITS, OFFICIAL_DEFAULT_SPLIT, "ALFWorld"),
        )
    )


def mini_games(split: str | None = None) -> list[AlfWorldGame]:
    """The alfworld-mini tasks shipped with this package."""
    _check_mini_split(split)
    return list(_mini_games())


def _spec(game: AlfWorldGame) -> TaskSpec:
    return TaskSpec(
        env=game.env,
        task_id=game.task_id,
        category=game.category,
        split=game.split,
        description=game.description,
    )


def list_official_tasks(split: str | None) -> list[TaskSpec]:
    return [_spec(game) for game in official_games(split)]


def list_mini_tasks(split: str | None) -> list[TaskSpec]:
    return [_spec(game) for game in mini_games(split)]


def find_game(env: str, task: str, split: str | None) -> AlfWorldGame:
    """Look a task up by id (or, for the official splits, by its index in the split)."""
    games = mini_games(split) if env == MINI_ENV else official_games(split)
    by_id = {game.task_id: game for game in games}
    key = task.strip().strip("/")
    if key in by_id:
        return by_id[key]
    if key.isdigit() and int(key) < len(games):
        return games[int(key)]
    # Official ids are "<task folder>/<trial>"; a unique task-folder prefix is enough.
    matches = [game for game in games if game.task_id.split("/", 1)[0] == key]
    if len(matches) == 1:
        return matches[0]
    if env == MINI_ENV:
        hint = ", ".join(by_id)
    else:
        hint = f"a task id such as {games[0].task_id!r}, or an index 0-{len(games) - 1}"
    raise EnvError(f"Unknown {env} task {task!r}; use {hint} (see `pos envs {env}`).")


# -- the environment -------------------------------------------------------------------------


def _clean_intro(feedback: str) -> tuple[str, str]:
    """Drop TextWorld's banner and pull out the goal sentence."""
    text = feedback.replace(_BANNER, "").strip()
    goal = ""
    for line in text.splitlines():
        if line.strip().startswith(_TASK_PREFIX):
            goal = line.strip()
    return text, goal


def _command_key(command: str) -> str:
    return " ".join(command.lower().split())


class AlfWorldEnvironment(BudgetedEnvironment):
    """One ALFWorld game in the TextWorld PDDL engine, with the planner expert."""

    name: str = OFFICIAL_ENV

    def __init__(self, game: AlfWorldGame, *, max_steps: int | None = None, expert: bool = True):
        super().__init__(
            task_id=game.task_id,
            max_steps=DEFAULT_MAX_STEPS if max_steps is None else max_steps,
            category=game.category,
            split=game.split,
        )
        self.game = game
        self.expert = expert
        self._game_data = game.game_data()
        self._admissible: dict[str, str] = {}
        self._backend = self._start_backend()

    def _start_backend(self) -> Any:
        try:
            import textworld
            from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
            from textworld.envs import PddlEnv
        except ImportError as exc:
            raise EnvError(
                "ALFWorld needs `alfworld` and `textworld[pddl]`: install the `envs` extra "
                "(`uv sync --extra envs`)."
            ) from exc
        pddl_cache.install()  # the game's PDDL-to-SAS translations, reused (_pddl_cache.py)
        infos = textworld.EnvInfos(admissible_commands=True, won=True, policy_commands=self.expert)
        backend = AlfredDemangler(PddlEnv(infos), shuffle=False)
        try:
            backend.load(self._game_data)
        except Exception as exc:
            raise EnvError(
                f"ALFWorld could not load game {self.game.task_id!r} from {self.game.folder}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        return backend

    def _crash_errors(self) -> tuple[type[BaseException], ...]:
        # The engine runs in-process; anything it raises means the engine, not the action,
        # failed (actions are checked against the admissible commands before they reach it).
        return (Exception,)

    def _result(self, state: Any, text: str) -> BackendResult:
        commands = [str(c) for c in state["admissible_commands"]]
        self._admissible = {_command_key(c): c for c in commands}
        won = bool(state["won"])
        plan = state.get("policy_commands") if self.expert else None
        return BackendResult(
            text=text,
            admissible_actions=commands,
            done=won,
            success=won,
            score=1.0 if won else 0.0,
            expert_action=str(plan[0]) if plan else None,
            extra={"task_type": self.game.task_type},
        )

    def _backend_reset(self) -> BackendResult:
        state = self._backend.reset()
        text, self.goal = _clean_intro(str(state.feedback))
        return self._result(state, text)

    def _backend_step(self, action: str) -> BackendResult:
        command = self._admissible.get(_command_key(action))
        if command is None:
            return self.invalid_result(
                f"{_NOTHING_HAPPENS} Invalid action {action!r}: it is not one of the admissible "
                "actions here."
            )
        state, _, _ = self._backend.step(command)
        return self._result(state, str(state.feedback).strip())

    def _backend_restart(self) -> None:
        self._backend_close()
        self._backend = self._start_backend()

    def _backend_close(self) -> None:
        backend, self._backend = self._backend, None
        if backend is not None:
            backend.close()


class AlfWorldMiniEnvironment(AlfWorldEnvironment):
    """An alfworld-mini task: the same engine, a different suite name."""

    name: str = MINI_ENV


def make_alfworld_env(
    env: str, task: str, *, split: str | None, max_steps: int | None, expert: bool = True
) -> AlfWorldEnvironment:
    """Build the environment for one official or mini task."""
    game = find_game(env, task, split)
    cls = AlfWorldMiniEnvironment if env == MINI_ENV else AlfWorldEnvironment
    return cls(game, max_steps=max_steps, expert=expert)
