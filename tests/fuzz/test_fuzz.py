"""A bounded fuzz run: mutated TensorFlow-written protos through the API and the CLI.

Every input must either run to the end or be rejected cleanly (a
``tfprof_lite.errors`` exception; CLI exit 1 or 2 with one error line). Anything
else fails the test with its signature and a reproducer directory, unless the
signature is listed in :data:`KNOWN`. ``make fuzz`` runs the same targets on many
more inputs (see ``docs/fuzzing.md``).
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from tests.fuzz import targets
from tests.fuzz.cases import TARGETS, Case, Corpus, make_case, seed_cases
from tests.fuzz.repro import save_reproducer
from tests.fuzz.runner import RunConfig, run_cases, run_cli_subprocess
from tests.fuzz.targets import Outcome

#: Known crash signatures ("<exception> @ <innermost tfprof_lite frame>") of bugs
#: being fixed elsewhere, each with what it is, e.g.
#: ``"OverflowError @ tfprof_lite/model/execs.py:msum": "int64 overflow: memory totals"``.
#: Only bugs with a fix under way belong here; delete an entry once its fix lands,
#: so that the test fails again if the bug comes back. Empty: every known bug the
#: slice used to hit is fixed.
KNOWN: dict[str, str] = {}

#: Fixed seed and number of mutated inputs per target of the suite's slice.
SEED = 20240601
SLICE = {"profile": 900, "build": 900, "cli": 700}
#: Rejected CLI cases (among the slice's first ones) re-run as real processes.
SUBPROCESS_CASES = 4
CONFIG = RunConfig(seed=SEED, timeout=10.0, batch=150)


def _describe(outcome: Outcome, where: Path) -> str:
    frames = "; ".join(outcome.frames[-3:])
    return f"{outcome.signature}: {outcome.message} [{frames}] reproducer: {where}"


def _unknown_others(
    outcomes: list[Outcome], corpus: Corpus, out: Path, cases: dict[tuple[str, int], Case]
) -> list[str]:
    """One line per unknown signature, with a reproducer saved under ``out``."""
    lines = []
    first: dict[str, Outcome] = {}
    for outcome in outcomes:
        if outcome.status == "other" and outcome.signature not in KNOWN:
            first.setdefault(outcome.signature, outcome)
    for signature, outcome in sorted(first.items()):
        key = (outcome.target, outcome.index)
        case = cases.get(key) or make_case(corpus, outcome.target, outcome.index, SEED)
        where = save_reproducer(out, case, outcome, SEED)
        count = sum(o.signature == signature for o in outcomes)
        lines.append(f"x{count} {_describe(outcome, where)}")
    return lines


@pytest.mark.parametrize("target", TARGETS)
def test_seed_files_are_accepted(corpus: Corpus, target: str) -> None:
    cases = seed_cases(corpus, target)
    outcomes = list(run_cases(cases, corpus, CONFIG))
    assert len(outcomes) == len(cases) > 0
    assert [(o.status, o.signature, o.message) for o in outcomes if o.status != "accepted"] == []


@pytest.mark.parametrize("target", TARGETS)
def test_mutated_inputs_end_cleanly(corpus: Corpus, target: str, tmp_path: Path) -> None:
    outcomes = list(run_cases([(target, i) for i in range(SLICE[target])], corpus, CONFIG))
    counts = Counter(o.status for o in outcomes)
    assert len(outcomes) == SLICE[target]
    # Both ends must be exercised, or the mutator or the harness is broken.
    assert counts["accepted"] >= SLICE[target] // 10, counts
    assert counts["clean"] >= SLICE[target] // 10, counts
    problems = _unknown_others(outcomes, corpus, tmp_path, {})
    assert not problems, "inputs that ended neither accepted nor cleanly rejected:\n" + "\n".join(
        problems
    )


def test_cli_subprocess_rejects_with_one_line(corpus: Corpus, tmp_path: Path) -> None:
    first = run_cases([("cli", i) for i in range(SUBPROCESS_CASES * 10)], corpus, CONFIG)
    rejected = [o for o in first if o.status == "clean"][:SUBPROCESS_CASES]
    assert len(rejected) == SUBPROCESS_CASES
    cases = {("cli", o.index): make_case(corpus, "cli", o.index, SEED) for o in rejected}
    results = [run_cli_subprocess(case) for case in cases.values()]
    assert all(r.status != "accepted" for r in results), results
    assert _unknown_others(results, corpus, tmp_path, cases) == []


def test_cases_are_deterministic(corpus: Corpus) -> None:
    for target in TARGETS:
        for index in (0, 7, 123):
            one, two = make_case(corpus, target, index, 5), make_case(corpus, target, index, 5)
            assert (one.files, one.argv, one.notes) == (two.files, two.argv, two.notes)
        others = {tuple(sorted(make_case(corpus, target, 0, s).files.items())) for s in range(8)}
        assert len(others) > 1


def _failing_target(kind: str) -> None:
    if kind == "raise":
        raise KeyError("planted")
    if kind == "stuck":  # the alarm cannot interrupt it: the parent must kill the worker
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    if kind in ("hang", "stuck"):
        while True:
            pass
    os._exit(3)


@pytest.mark.parametrize(
    ("kind", "signature"),
    [
        ("raise", "KeyError @ test_fuzz.py:_failing_target"),
        ("hang", "Hang @ test_fuzz.py:_failing_target"),
        ("die", "WorkerDied @ profile"),
        ("stuck", "WorkerStuck @ profile"),
    ],
)
def test_harness_reports_crashes_and_hangs(
    corpus: Corpus, monkeypatch: pytest.MonkeyPatch, kind: str, signature: str
) -> None:
    """A planted exception, hang, worker death and stuck worker are each one ``other``
    outcome, and the run goes on with the next case."""
    planted = Case("profile", 0, {"profile": b"planted"})
    healthy = seed_cases(corpus, "profile")[0]
    monkeypatch.setitem(
        targets._API,
        "profile",
        lambda case, out: _failing_target(kind) if case is planted else None,
    )
    config = RunConfig(timeout=0.5, batch=10, grace=1.5)
    outcomes = list(run_cases([planted, healthy], corpus, config))
    assert [o.status for o in outcomes] == ["other", "accepted"]
    assert outcomes[0].signature == signature
