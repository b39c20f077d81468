"""tfprof's incomplete-shapes note: as the drop-in API prints it, once for our capture."""

from __future__ import annotations

import pytest

from tfprof_lite.capture import notes

LINE = "3 ops no flops stats due to incomplete shapes.\n"


def test_note_each_time_outside_once_inside(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(notes, "_internal_noted", False)
    notes.note_incomplete_shapes(3)
    notes.note_incomplete_shapes(3)
    notes.note_incomplete_shapes(0)
    assert capsys.readouterr().err == LINE * 2  # the drop-in: as TensorFlow, every time
    for _ in range(3):
        with notes.internal_capture():
            notes.note_incomplete_shapes(3)
    assert capsys.readouterr().err == LINE  # our own capture: once per process
    notes.note_incomplete_shapes(3)  # the drop-in again, unaffected
    assert capsys.readouterr().err == LINE
