"""The mechanisms of issue 32, each on a small case written here (none taken from a corpus):
format-free masking, restating probes, progress with facts, semantic loops, productive
repetition, and the floor."""

from __future__ import annotations

from pos_agent.monitor import Facts, ToolCall, TrapMonitor
from pos_agent.monitor.evidence import Evidence, call_verb, output_units
from pos_agent.monitor.volatile import bare, normalise, numbers_shrank, skeleton


def call(tool: str, **arguments: object) -> ToolCall:
    return ToolCall(tool, arguments)


def trapped(reports) -> list[bool]:  # type: ignore[no-untyped-def]
    return [r.trapped for r in reports]


# --- 1. format-free masking -------------------------------------------------------------------


def test_tokens_with_digits_are_masked_whatever_their_format() -> None:
    # Formats no volatile rule names: a clock with a trailing Z, a slash id, a tick counter,
    # a dotted build number, a port after an odd host name.
    first = normalise("ready 07:57:24Z job/7f3k2 tick=48213 build 4.18.2 at relay-x:40811")
    again = normalise("ready 08:01:09Z job/q0v9a tick=48992 build 4.18.7 at relay-x:51002")
    assert first != again
    assert skeleton(first) == skeleton(again)


def test_small_plain_numbers_are_kept_and_bare_masks_them_too() -> None:
    assert skeleton("you open drawer 2") != skeleton("you open drawer 3")
    assert skeleton("assert 1.5 == 4.0") != skeleton("assert 512.0 == 30.0")
    assert bare(skeleton("you open drawer 2")) == bare(skeleton("you open drawer 3"))
    assert skeleton("ports 5432 and 5433") == skeleton("ports 6001 and 6002")


def test_a_repeat_differing_only_in_unknown_volatile_tokens_reads_as_a_repeat() -> None:
    monitor = TrapMonitor(goal="get the relay up")
    reports = [
        monitor.observe(
            call("relay_status", name="north"),
            f"relay north: DOWN since 0{n}:1{n}:2{n}Z (probe #{9000 + 37 * n}, seq=a{n}f{n}9)",
        )
        for n in range(5)
    ]
    assert trapped(reports)[:2] == [False, False]
    assert reports[2].trapped and reports[2].pattern == "static"


# --- 2. read-only probes that restate what is known -------------------------------------------


def test_examining_one_thing_again_with_known_probes_between_is_caught() -> None:
    monitor = TrapMonitor(goal="light the lantern")
    steps = [
        ("examine statue", "A marble statue of a heron. Its beak points west."),
        ("inventory", "You are carrying: a lantern (unlit), a flint."),
        ("look", "Garden. A statue stands here. Paths lead west and south."),
    ]
    reports = [monitor.observe(*step) for _ in range(5) for step in steps]
    examine_reports = reports[0::3]
    # The third `examine statue` with nothing new since the first: alarmed by then.
    assert any(r.trapped for r in examine_reports[:3])
    assert examine_reports[-1].trapped


def test_information_never_seen_is_progress_and_a_restatement_is_not() -> None:
    evidence = Evidence()
    told = evidence.inform(bare(skeleton("Garden. A statue stands here.")))
    assert told == 2
    assert evidence.inform(bare(skeleton("A statue stands here.\nGarden."))) == 0
    assert evidence.inform(bare(skeleton("Garden. A well stands here."))) == 1


# --- 3. with facts: progress is goal-relevant state, not new words ----------------------------


def test_with_facts_new_words_about_unrelated_things_are_not_progress() -> None:
    monitor = TrapMonitor(goal="put the key in the box")
    world = {"at(player, hall)", "in(key, drawer)", "closed(box)"}
    facts = Facts(world=frozenset(world), goals=frozenset({"in(key, box)"}))
    adjectives = ["dusty", "gilded", "cracked", "ornate", "faded", "tall", "narrow", "crooked"]
    reports = [
        monitor.observe(
            f"examine painting {n}", f"The painting is {word} and {word}er still.", facts
        )
        for n, word in enumerate(adjectives)
    ]
    assert reports[-1].trapped


def test_with_facts_a_goal_relevant_state_never_held_before_is_progress() -> None:
    monitor = TrapMonitor(goal="put the key in the box")
    goals = frozenset({"in(key, box)"})
    places = ["drawer", "table", "shelf", "floor", "hand", "bag"]
    reports = [
        monitor.observe(
            f"move key to {place}",
            "Done.",
            Facts(world=frozenset({"at(player, hall)", f"in(key, {place})"}), goals=goals),
        )
        for place in places
    ]
    assert not any(trapped(reports))


# --- 4. semantic loops -------------------------------------------------------------------------


def test_varied_attempts_failing_alike_with_reads_between_are_a_semantic_loop() -> None:
    monitor = TrapMonitor(goal="make the import work")
    failure = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'lib'"
    steps = [
        (call("bash", command="python run.py"), failure),
        (call("bash", command="cat setup.cfg"), "[metadata]\nname = lib\nversion = 0.3"),
        (call("bash", command="export PYTHONPATH=src"), ""),
        (call("bash", command="python run.py"), failure),
        (call("bash", command="ls src"), "lib_core\nREADME"),
        (call("bash", command="pip install -e ."), "Successfully installed lib-0.3"),
        (call("bash", command="python -m run"), failure),
    ]
    reports = [monitor.observe(*step) for step in steps]
    assert reports[-1].trapped and reports[-1].pattern == "drift"


def test_three_identical_failures_in_a_row_are_caught() -> None:
    monitor = TrapMonitor(goal="deploy")
    reports = [
        monitor.observe(call("deploy", env="prod"), f"error: quota exceeded (ref {n}a{n}c)")
        for n in range(3)
    ]
    assert reports[2].trapped


def test_a_new_failure_each_round_is_not_a_semantic_loop() -> None:
    monitor = TrapMonitor(goal="make the tests pass")
    reports = []
    for n, error in enumerate(["NameError: name 'x'", "TypeError: f() takes 1", "KeyError: 'y'"]):
        reports.append(monitor.observe(call("edit", path="m.py", line=n), "Edited m.py"))
        reports.append(monitor.observe(call("bash", command="pytest"), f"FAILED t.py - {error}"))
    assert not any(trapped(reports))


def test_the_same_failure_read_in_log_after_log_is_no_attempt() -> None:
    evidence = Evidence()
    for n in range(6):
        text = f"==> app-{n}.log <==\nerror: timeout\nok"
        shape = skeleton(normalise(text))
        found = evidence.observe(
            f"cat app-{n}.log",
            call_verb((), f"cat app-{n}.log"),
            shape,
            "error: timeout",
            informative=evidence.inform(bare(shape)),
            progress=False,
            waiting=False,
        )
        assert found.semantic is None


# --- 5. productive repetition -----------------------------------------------------------------


def test_a_moving_meter_of_one_call_is_progress() -> None:
    monitor = TrapMonitor(goal="finish the export")
    reports = [
        monitor.observe(call("export_status", id="x9"), f"exporting: {pct}% (step {k} of 9)")
        for k, pct in enumerate(range(10, 100, 10), start=1)
    ]
    assert not any(trapped(reports))


def test_a_meter_alone_moving_in_otherwise_equal_outputs_is_progress_and_a_stuck_one_is_not() -> (
    None
):
    # Only the percentage moves: the skeleton of every output is the same, so the window alone
    # reads a static loop; the meter's advance must count as progress as a label would.
    monitor = TrapMonitor(goal="deploy the service")
    moving = [
        monitor.observe(call("job_status", job="d-7"), f"d-7: running, {min(pct, 99)}% done")
        for pct in range(6, 100, 6)
    ]
    assert not any(trapped(moving))
    stuck_monitor = TrapMonitor(goal="deploy the service")
    stuck = [
        stuck_monitor.observe(call("job_status", job="d-7"), "d-7: running, 42% done")
        for _ in range(8)
    ]
    assert any(trapped(stuck))


def test_a_closing_distance_of_one_command_is_progress() -> None:
    assert numbers_shrank("a gate 4 paces ahead", "a gate 3 paces ahead")
    assert not numbers_shrank("a gate 3 paces ahead", "a gate 4 paces ahead")
    assert not numbers_shrank("100 96 100 96", "100 95 100 95")  # numbers among numbers
    monitor = TrapMonitor(goal="reach the gate")
    reports = [
        monitor.observe("walk on", f"a gate {d} paces ahead\na hedge 1 pace left")
        for d in range(7, 0, -1)
    ]
    assert not any(trapped(reports))


def test_paging_through_results_is_not_a_loop() -> None:
    monitor = TrapMonitor(goal="find the invoice")
    reports = [
        monitor.observe(call("list_invoices", page=p), f"invoices: INV-{p}1 acme, INV-{p}2 zeta")
        for p in range(1, 8)
    ]
    assert not any(trapped(reports))


def test_a_declared_poll_that_ends_in_success_is_not_alarmed() -> None:
    monitor = TrapMonitor(goal="wait for the build", polling_tools={"build_status": 6})
    outputs = ["queued"] * 3 + ["running"] * 2 + ["succeeded"]
    reports = [monitor.observe(call("build_status", id="b1"), o) for o in outputs]
    assert not any(trapped(reports))


# --- 6. the floor -------------------------------------------------------------------------------


def test_an_exact_repeat_of_call_and_output_fires_without_progress_between() -> None:
    monitor = TrapMonitor(goal="open the vault")
    steps = [
        (call("try_code", code="1234"), "wrong code"),
        (call("read_note", name="a"), "the note says: try the year"),
        (call("try_code", code="1234"), "wrong code"),
        (call("read_note", name="a"), "the note says: try the year"),
        (call("try_code", code="1234"), "wrong code"),
    ]
    reports = [monitor.observe(*step) for step in steps]
    assert reports[-1].trapped and reports[-1].pattern == "cycle"


def test_the_floor_holds_off_when_a_step_between_told_something_new() -> None:
    monitor = TrapMonitor(goal="open the vault")
    steps = [
        (call("try_code", code="1234"), "wrong code"),
        (call("read_note", name="a"), "the note says: try the year"),
        (call("try_code", code="1234"), "wrong code"),
        (call("read_note", name="b"), "the second note says: the year of the flood"),
        (call("try_code", code="1234"), "wrong code"),
    ]
    reports = [monitor.observe(*step) for step in steps]
    assert not reports[-1].trapped


def test_output_units_are_lines_and_sentences() -> None:
    assert output_units("a b. c d!\n\ne f\n  --  ") == frozenset({"a b", "c d", "e f"})
    # A word said again at once, a plural, a masked number: no new unit.
    assert output_units("the bells ring ring # times") == output_units("the bell ring time")


def test_a_rerun_after_only_reading_is_no_new_attempt() -> None:
    """The same failing call again with only known calls between (nothing was tried) is one
    attempt re-run; a call never made before between (an edit) makes the next failure a new
    attempt, and three of them failing alike are a semantic loop."""

    def semantic(steps: list[tuple[str, str, str | None, bool]]) -> str | None:
        evidence = Evidence()
        found = None
        for key, output, failure, new_call in steps:
            shape = skeleton(normalise(output))
            found = evidence.observe(
                key,
                call_verb(("bash",), key),
                shape,
                failure,
                informative=evidence.inform(bare(shape)),
                progress=False,
                waiting=False,
                new_call=new_call,
            ).semantic
        return found

    fail = 'bash {"command":"pytest t.py"}', "FAILED test_a - KeyError", "keyerror"
    read = 'bash {"command":"cat t.py"}', "def test_a(): d['b']", None
    reread = [(*read, True), (*fail, True), (*read, False), (*fail, False), (*read, False)]
    assert semantic([*reread, (*fail, False)]) is None
    edits = []
    for n in range(3):
        edits += [(f'bash {{"command":"sed -i s/{n}/x/ t.py"}}', "", None, True), (*fail, n == 0)]
    assert semantic(edits) == "static"
