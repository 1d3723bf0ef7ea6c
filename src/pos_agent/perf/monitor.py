"""Cost of the trap monitor on a model-free stream (no belief, no progress label).

    python -m pos_agent.perf.monitor [--steps 10000] [--repeats 5]

The stream is a text game played by a scripted agent: rooms with objects, walks to new rooms,
stretches of a repeated `look`, two-room loops and fiddling with irrelevant objects, so that
every code path (novelty, returns, drift, recovery text when trapped) runs. Observations are
built before the clock starts, and when a step is trapped its recovery text is read, as a loop
that shows it to its agent would. The last lines are
`monitor: <n> steps in <s> s (<mode>; cpu <c> s)` per diagnosis mode, best of --repeats passes;
the target is under 1 s for 10,000 steps on a 2-core machine. Wall time counts waiting for a
core when the machine is shared; CPU time is what the monitor itself used.
"""

from __future__ import annotations

import argparse
import random
import time

from pos_agent.monitor import TrapMonitor

SYLLABLES = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "vo", "pe", "zu"]


def name(number: int) -> str:
    """A distinct pronounceable word per number (`kakaka` ...), so a walk keeps meeting new ones."""
    return "".join(SYLLABLES[int(digit)] for digit in f"{number:05d}")


def scripted_stream(steps: int, seed: int = 0) -> list[tuple[str, str]]:
    """(action, observation) pairs of a scripted agent that keeps getting stuck in new ways."""
    rng = random.Random(seed)
    rooms = [name(2 * i) for i in range(steps)]
    things = [name(2 * i + 1) for i in range(steps + 3)]
    stream: list[tuple[str, str]] = []
    room = 0
    while len(stream) < steps:
        # Mostly exploring; now and then a stretch of one of the three traps.
        mode = rng.choice(["walk", "walk", "walk", "look", "loop", "fiddle"])
        for i in range(rng.randint(3, 10)):
            if mode == "walk":
                room = (room + 1) % len(rooms)
                action = "go north"
            elif mode == "look":
                action = "look"
            elif mode == "loop":
                room = room + 1 if i % 2 == 0 else room - 1
                action = "go north" if i % 2 == 0 else "go south"
            else:
                thing = things[(room + rng.randint(0, 2)) % len(things)]
                action = f"{rng.choice(['take', 'drop'])} {thing}"
            here = rooms[room % len(rooms)]
            visible = ", a ".join(things[(room + k) % len(things)] for k in range(3))
            observation = (
                f"-= {here.title()} =- You are in the {here}. "
                f"You see a {visible}. Exits lead north and south."
            )
            if mode == "fiddle":
                observation = f"You {action.split()[0]} the {action.split()[1]}."
            stream.append((action, observation))
    return stream[:steps]


def time_monitor(stream: list[tuple[str, str]], health: str) -> tuple[float, float, int]:
    """Wall and CPU seconds of one pass of a fresh monitor over the stream, and how many steps
    were trapped."""
    monitor = TrapMonitor(goal="find the golden key", health=health)  # type: ignore[arg-type]
    trapped = 0
    started, cpu = time.perf_counter(), time.process_time()
    for action, observation in stream:
        report = monitor.observe(action, observation)
        if report.trapped:
            trapped += 1
            shown = report.recovery  # what a loop would show its agent
            assert shown
    return time.perf_counter() - started, time.process_time() - cpu, trapped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5, help="Best of this many passes.")
    args = parser.parse_args()
    stream = scripted_stream(args.steps)
    lines = []
    for health in ("improved", "paper"):
        runs = [time_monitor(stream, health) for _ in range(args.repeats)]
        best = min(wall for wall, _, _ in runs)
        cpu = min(used for _, used, _ in runs)
        trapped = runs[0][2]
        print(
            f"{health}: {args.steps} steps, best of {args.repeats}: {best:.3f} s "
            f"({1e6 * best / args.steps:.1f} us/step), trapped on {trapped} steps"
        )
        lines.append(f"monitor: {args.steps} steps in {best:.3f} s ({health}; cpu {cpu:.3f} s)")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
