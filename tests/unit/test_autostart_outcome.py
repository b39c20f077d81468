"""The end line of ``python -m tfprof_lite.run`` tells apart why no profile was written
(the real-TensorFlow runs are in ``tests/integration/test_capture_eager.py``)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from tfprof_lite.session import autostart


@pytest.fixture
def last(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """A stand-in for the last autostarted context, entered, that saw a run."""
    context = SimpleNamespace(saw_session_run=True)
    monkeypatch.setattr(autostart._state, "last", context)
    monkeypatch.setattr(autostart._state, "last_entered", True)
    return context


def test_files_are_listed(last: SimpleNamespace) -> None:
    assert autostart.outcome(["profile_3", "profile_6"]) == "profile_3, profile_6"


def test_runs_without_a_dump_step(last: SimpleNamespace) -> None:
    assert autostart.outcome([]) == (
        "none (Session.run calls were seen, but no dump step was reached)"
    )


@pytest.mark.parametrize(
    ("eager", "expected"),
    [
        (True, "none (the program ran eagerly: no graph-mode Session.run was seen)"),
        (False, "none (no Session.run was seen)"),
    ],
)
def test_no_run(
    last: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, eager: bool, expected: str
) -> None:
    last.saw_session_run = False
    monkeypatch.setattr(autostart, "executing_eagerly", lambda: eager)
    assert autostart.outcome([]) == expected


def test_never_entered(last: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(autostart._state, "last_entered", False)
    monkeypatch.delitem(sys.modules, autostart._SESSION_MODULE, raising=False)
    assert autostart.outcome([]) == (
        "none (TensorFlow was not imported, so profiling never started)"
    )
    monkeypatch.setitem(sys.modules, autostart._SESSION_MODULE, SimpleNamespace())
    assert autostart.outcome([]) == "none (profiling could not start; see the warning above)"
