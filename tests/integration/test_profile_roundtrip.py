"""ProfileProto files (``serialize_to_string`` / ``profile_<step>``) between TF and us.

(a) our ``Profiler.serialize_to_string()`` written to a file and loaded by TF's
    ``ProfilerFromFile`` gives TF's own reports on the same data;
(b) TF's ``serialize_to_string()`` loaded by ``tfprof_lite.Profiler.load`` (bytes
    or path) gives TF's reports;
(c) our serialization re-loaded by us serializes to the same message and gives
    the same reports; it also equals TF's serialization as a parsed message.

On the five real models and on hand-made GPU-style, code and step profiles. A
loaded profile does not keep the missing-accelerator-stream flag (as in TF), so
the live report's warning is dropped before comparing. Bad input to
``Profiler.load`` raises `tfprof_lite.InvalidInputError` with one line naming the
file.

TF's profiler is a process-wide singleton: the TF-side loads go through the
oracle module's tracking proxy (``tf_oracle._pywrap``), after
``tf_oracle.close_current()``, and delete the loaded profiler afterwards.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

pytest.importorskip("tensorflow")

from tensorflow.core.profiler import tfprof_log_pb2  # noqa: E402
from tensorflow.python.profiler import model_analyzer  # noqa: E402

import tfprof_lite  # noqa: E402
from tests import hand_cases  # noqa: E402
from tests.handmade import ALL_SELECT  # noqa: E402
from tests.integration import hand_oracle as ho  # noqa: E402
from tests.integration import tf_models, tf_oracle  # noqa: E402
from tests.integration.conftest import CAPTURE_NAMES  # noqa: E402
from tfprof_lite.options.builder import ProfileOptionBuilder as B  # noqa: E402
from tfprof_lite.outputs.text import MISSING_STREAM_WARNING  # noqa: E402

pytestmark = pytest.mark.tf

VIEWS = ("scope", "graph", "op", "code")
#: Every column but ``tensor_value``.
SELECT = [name for name in ALL_SELECT if name != "tensor_value"]


def _queries(steps: list[int]) -> list[dict[str, Any]]:
    """Option sets run on every loaded profile (all steps, several orders)."""
    out = [
        B().select(SELECT).build(),
        B().select(SELECT).order_by("micros").with_max_depth(4).build(),
        B.trainable_variables_parameter(),
        B().select(["accelerator_micros", "cpu_micros", "bytes"]).order_by("occurrence").build(),
    ]
    sel = ["micros", "bytes", "occurrence"]
    out += [B().with_step(step).select(sel).build() for step in sorted({steps[0], steps[-1]})]
    return out


HAND_CASES = {
    "gpu": hand_cases.gpu_case,
    "gpu_no_stream": hand_cases.gpu_no_stream_case,
    "code": hand_cases.code_case,
    "steps": hand_cases.steps_case,
}

Report = tuple[str, bytes]


def _steps(run_metas: list[tuple[int, bytes]]) -> list[int]:
    return sorted({step for step, _ in run_metas})


def _without_warning(text: str) -> str:
    return text[len(MISSING_STREAM_WARNING) :] if text.startswith(MISSING_STREAM_WARNING) else text


class Subject:
    """One profile under test: the live TF oracle and our live profiler."""

    def __init__(self, name: str, oracle: Any, ours: tfprof_lite.Profiler, steps: list[int]):
        self.name = name
        self.oracle = oracle
        self.ours = ours
        self.queries = _queries(steps)

    @functools.cached_property
    def _tf_live(self) -> tuple[list[Report], bytes]:
        # One activation of TF's (singleton) profiler for everything the tests need.
        reports = []
        for view in VIEWS:
            for options in self.queries:
                text = _without_warning(self.oracle.text(view, options))
                reports.append((text, self.oracle.proto(view, options)))
        return reports, bytes(self.oracle.serialized_profile(canonical=False))

    @property
    def expected(self) -> list[Report]:
        """TF's live reports (text without the not-saved warning, canonical message)."""
        return self._tf_live[0]

    @property
    def tf_serialized(self) -> bytes:
        """TF's ``serialize_to_string()`` bytes (maps in C++ hash order)."""
        return self._tf_live[1]


@functools.cache
def _hand_subject(name: str) -> Subject:
    case = HAND_CASES[name]()
    return Subject(name, ho.hand_oracle_for(case), ho.ours_for(case), _steps(case.run_metas))


@functools.cache
def _model_subject(name: str) -> Subject:
    capture = tf_models.ALL_CAPTURES[name]()
    oracle = tf_oracle.oracle_for(capture)
    return Subject(name, oracle, ho.ours_for_capture(capture), _steps(capture.run_metas))


SUBJECTS = [f"hand:{name}" for name in sorted(HAND_CASES)] + [
    f"model:{name}" for name in CAPTURE_NAMES
]


@pytest.fixture(params=SUBJECTS)
def subject(request: pytest.FixtureRequest) -> Subject:
    """Each hand-made case and each real-model capture."""
    kind, _, name = str(request.param).partition(":")
    return _hand_subject(name) if kind == "hand" else _model_subject(name)


# ----------------------------------------------------------------- TF-side loading


def _tf_report(view: str, options: Mapping[str, Any]) -> Report:
    """Query TF's current (loaded) global profiler: file text and canonical message."""
    wrap = tf_oracle._pywrap
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.txt")
        opts = model_analyzer._build_options(dict(options, output=f"file:outfile={path}"))
        wrap.Profile(view.encode(), opts.SerializeToString())
        text = tf_oracle._read_text(path)
    opts = model_analyzer._build_options(dict(options, output="none"))
    raw = bytes(wrap.Profile(view.encode(), opts.SerializeToString()))
    return text, tf_oracle.canonical_proto(tf_oracle._PROTO_CLASSES[view], raw)


@contextlib.contextmanager
def _tf_loaded(path: str) -> Iterator[None]:
    """TF's global profiler loaded from ``path`` (``ProfilerFromFile``), deleted after."""
    tf_oracle.close_current()
    tf_oracle._pywrap.ProfilerFromFile(path.encode())
    try:
        yield
    finally:
        tf_oracle.close_current()


def _write(tmp_path: Any, data: bytes, name: str = "profile_0") -> str:
    path = os.path.join(str(tmp_path), name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def _our_report(prof: tfprof_lite.Profiler, view: str, options: Mapping[str, Any]) -> Report:
    """One query of ours: the ``-output file`` text and the canonical returned message."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "report.txt")
        msg = getattr(prof, ho.METHODS[view])(dict(options, output=f"file:outfile={path}"))
        text = tf_oracle._read_text(path)
    return text, tf_oracle.canonical_proto(tf_oracle._PROTO_CLASSES[view], msg.SerializeToString())


def _reports(prof: tfprof_lite.Profiler, queries: list[dict[str, Any]]) -> list[Report]:
    return [_our_report(prof, view, options) for view in VIEWS for options in queries]


def _canonical(data: bytes) -> bytes:
    return tf_oracle.canonical_proto(tfprof_log_pb2.ProfileProto, data)


# ----------------------------------------------------------------- the tests


def test_ours_loaded_by_tf(subject: Subject, tmp_path: Any) -> None:
    """(a) TF's ProfilerFromFile on our bytes reproduces TF's own reports."""
    expected = subject.expected
    path = _write(tmp_path, subject.ours.serialize_to_string())
    with _tf_loaded(path):
        got = [_tf_report(view, options) for view in VIEWS for options in subject.queries]
    assert got == expected


def test_tf_loaded_by_us(subject: Subject, tmp_path: Any) -> None:
    """(b) Our Profiler.load on TF's bytes (and on a file of them) gives TF's reports."""
    expected = subject.expected
    data = subject.tf_serialized
    from_bytes = tfprof_lite.Profiler.load(data)
    assert _reports(from_bytes, subject.queries) == expected
    from_file = tfprof_lite.Profiler.load(_write(tmp_path, data))
    assert _canonical(from_file.serialize_to_string()) == _canonical(
        from_bytes.serialize_to_string()
    )
    assert _our_report(from_file, "scope", subject.queries[0]) == expected[0]


def test_ours_loaded_by_us(subject: Subject) -> None:
    """(c) Our bytes re-loaded by us: same message, the (live) reports; equal to TF's
    message."""
    data = subject.ours.serialize_to_string()
    loaded = tfprof_lite.Profiler.load(data)
    again = loaded.serialize_to_string()
    original = tfprof_log_pb2.ProfileProto.FromString(data)
    original.ClearField("miss_accelerator_stream")  # not restored on load (as in TF)
    assert _canonical(again) == _canonical(original.SerializeToString())
    assert _canonical(data) == _canonical(subject.tf_serialized)
    assert _reports(loaded, subject.queries) == subject.expected


def test_missing_stream_flag_is_saved_but_not_restored(tmp_path: Any) -> None:
    """Both sides write ``miss_accelerator_stream``; neither restores it on load."""
    subject = _hand_subject("gpu_no_stream")
    data = subject.ours.serialize_to_string()
    assert tfprof_log_pb2.ProfileProto.FromString(data).miss_accelerator_stream
    options = B().select(["micros"]).build()
    assert ho.our_text(subject.ours, "scope", options).startswith(MISSING_STREAM_WARNING)
    assert ho.our_text(tfprof_lite.Profiler.load(data), "scope", options).startswith("\nDoc:\n")
    with _tf_loaded(_write(tmp_path, data)):
        assert _tf_report("scope", options)[0].startswith("\nDoc:\n")


# ----------------------------------------------------------------- bad input


def _load_error(source: Any) -> str:
    with pytest.raises(tfprof_lite.InvalidInputError) as info:
        tfprof_lite.Profiler.load(source)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_load_missing_file(tmp_path: Any) -> None:
    path = os.path.join(str(tmp_path), "no_such_profile")
    assert path in _load_error(path)


def test_load_empty_file(tmp_path: Any) -> None:
    path = _write(tmp_path, b"", "empty")
    assert path in _load_error(path)
    assert _load_error(b"")


def test_load_garbage(tmp_path: Any) -> None:
    garbage = b"\xff\xfe\xfd not a profile \x00\x01\x02" * 3
    path = _write(tmp_path, garbage, "garbage")
    assert path in _load_error(path)
    assert _load_error(garbage)


def test_load_directory(tmp_path: Any) -> None:
    assert str(tmp_path) in _load_error(str(tmp_path))


def test_load_run_metadata_bytes(tmp_path: Any) -> None:
    """A RunMetadata (wrong message type) is refused, hand-made or from a session."""
    metas = [hand_cases.gpu_case().run_metas[0][1]]
    metas.append(tf_models.dense_net().run_metas[0][1])
    for index, data in enumerate(metas):
        path = _write(tmp_path, data, f"run_meta_{index}")
        assert path in _load_error(path)
        _load_error(data)
