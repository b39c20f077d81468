"""Failure reporting of captures (no TensorFlow): once per kind, then a summary."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tfprof_lite.errors import TfprofLiteError
from tfprof_lite.session.recorder import FailureLog, ProfileRecorder


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "tfprof_lite"]


def test_first_failure_of_each_kind_logged_repeats_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failures = FailureLog()
    with caplog.at_level(logging.WARNING, logger="tfprof_lite"):
        for step in range(5):
            failures.record("writing a file", OSError(f"disk full at {step}"))
        failures.record("writing a file", ValueError("bad"))  # same action, new type
        failures.record("reading the graph", OSError("gone"))
        assert failures.total == 7
        failures.flush()
        failures.flush()  # nothing new: no second summary
    assert _messages(caplog) == [
        "tfprof_lite: profiling failed (training continues) while writing a file: "
        "disk full at 0 [repeats of this failure are counted, not logged]",
        "tfprof_lite: profiling failed (training continues) while writing a file: "
        "bad [repeats of this failure are counted, not logged]",
        "tfprof_lite: profiling failed (training continues) while reading the graph: "
        "gone [repeats of this failure are counted, not logged]",
        "tfprof_lite: 7 profiling failures in total, training was not affected: "
        "writing a file (OSError): 5, writing a file (ValueError): 1, "
        "reading the graph (OSError): 1",
    ]
    assert failures.total == 0


def test_a_kind_is_described_once_even_across_flushes(caplog: pytest.LogCaptureFixture) -> None:
    failures = FailureLog()
    with caplog.at_level(logging.WARNING, logger="tfprof_lite"):
        failures.record("dumping", OSError("x"))
        failures.flush()
        failures.record("dumping", OSError("x"))
        failures.flush()
    assert [m.split(":")[1].strip() for m in _messages(caplog)] == [
        "profiling failed (training continues) while dumping",
        "1 profiling failure in total, training was not affected",
        "1 profiling failure in total, training was not affected",
    ]


def test_profile_dir_that_is_a_file_is_named_with_the_fix(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(TfprofLiteError, match=r"profile_dir .*file is not a directory; pass"):
        ProfileRecorder(str(blocker)).write_file("profile_1", b"")
    with pytest.raises(TfprofLiteError, match=r"cannot create profile_dir .*file/sub: "):
        ProfileRecorder(str(blocker / "sub")).write_file("profile_1", b"")
    recorder = ProfileRecorder(str(tmp_path / "a" / "b"))
    assert Path(recorder.write_file("profile_1", b"x")).read_bytes() == b"x"
