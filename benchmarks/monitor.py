"""Cost of the trap monitor on model-free streams (no belief, no progress label).

    python -m benchmarks.monitor [--steps 10000] [--repeats 5]

Two streams. `text`: a text game played by a scripted agent: rooms with objects, walks to new
rooms, stretches of a repeated `look`, two-room loops and fiddling with irrelevant objects, so
that every code path (novelty, returns, drift, recovery text when trapped) runs. `tools`: tool
calls (JSON arguments) whose outputs carry timestamps, request ids, durations and ports, with
repeated calls, A/B alternations and new files read, so the volatile rules and the action keys
run on every step. Observations are built before the clock starts, and when a step's advice
says to inject or block, its text is read, as a loop that shows it to its agent would. The last
lines are `monitor: <n> steps in <s> s (<stream>, <mode>; cpu <c> s, <u> us/step)` per stream
and diagnosis mode, best of --repeats passes; the target is 0.1 ms (100 us) a step. Wall time
counts waiting for a core when the machine is shared; CPU time is what the monitor itself used.
"""

from __future__ import annotations

import argparse
import random
import time

from pos_agent.monitor import ToolCall, TrapMonitor

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


def tool_stream(steps: int, seed: int = 0) -> list[tuple[object, str]]:
    """(tool call, output) pairs of a scripted tool agent: reading new files, re-running a
    failing request, alternating edit and test, with noisy outputs."""
    rng = random.Random(seed)
    stream: list[tuple[object, str]] = []
    n = 0
    while len(stream) < steps:
        mode = rng.choice(["read", "read", "read", "retry", "edit-test", "search"])
        for i in range(rng.randint(3, 10)):
            n += 1
            call: object
            stamp = f"2026-12-01T{n % 24:02d}:{n % 60:02d}:{(7 * n) % 60:02d}.{n % 1000:03d}Z"
            if mode == "read":
                path = f"src/{name(n)}.py"
                call = ToolCall("read_file", {"path": path, "limit": 200})
                output = f"{path} ({n % 90 + 10} lines)\ndef {name(n + 1)}(): return {n}\n"
            elif mode == "retry":
                call = ToolCall("shell", {"cmd": "curl -s http://localhost:8080/api/jobs"})
                output = (
                    f"HTTP/1.1 503 at {stamp} request_id=req_{n:08x}a "
                    f"({rng.randint(5, 90)}ms) upstream 10.0.3.{n % 250}:{30000 + n % 999}"
                )
            elif mode == "edit-test":
                if i % 2 == 0:
                    call = ToolCall("edit", {"path": "calc.py", "old": "a - b", "new": "a + b"})
                    output = "Edited calc.py."
                else:
                    call = ToolCall("shell", {"cmd": "pytest -q tests"})
                    output = f"F.. 1 failed, 2 passed in 0.{rng.randint(10, 99)}s [{stamp}]"
            else:
                call = {"name": "search", "arguments": f'{{"query": "{name(n)}", "page": {i}}}'}
                output = f"{rng.randint(0, 9)} results for {name(n)} in {rng.randint(1, 40)}ms"
            stream.append((call, output))
    return stream[:steps]


def time_monitor(stream: list[tuple[object, str]], health: str) -> tuple[float, float, int]:
    """Wall and CPU seconds of one pass of a fresh monitor over the stream, and how many steps
    were trapped."""
    monitor = TrapMonitor(goal="find the golden key", health=health)  # type: ignore[arg-type]
    trapped = 0
    started, cpu = time.perf_counter(), time.process_time()
    for action, observation in stream:
        report = monitor.observe(action, observation)
        if report.trapped:
            trapped += 1
        if report.advice.kind in ("inject", "block"):
            shown = report.advice.text or report.advice.forbidden_actions  # what a loop shows
            assert shown
    return time.perf_counter() - started, time.process_time() - cpu, trapped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5, help="Best of this many passes.")
    args = parser.parse_args()
    streams: dict[str, list[tuple[object, str]]] = {
        "text": list(scripted_stream(args.steps)),
        "tools": tool_stream(args.steps),
    }
    lines = []
    for label, stream in streams.items():
        for health in ("improved", "paper"):
            runs = [time_monitor(stream, health) for _ in range(args.repeats)]
            best = min(wall for wall, _, _ in runs)
            cpu = min(used for _, used, _ in runs)
            trapped = runs[0][2]
            print(
                f"{label}, {health}: {args.steps} steps, best of {args.repeats}: {best:.3f} s "
                f"({1e6 * best / args.steps:.1f} us/step wall, {1e6 * cpu / args.steps:.1f} "
                f"us/step cpu), trapped on {trapped} steps"
            )
            lines.append(
                f"monitor: {args.steps} steps in {best:.3f} s ({label}, {health}; "
                f"cpu {cpu:.3f} s, {1e6 * cpu / args.steps:.1f} us/step)"
            )
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
