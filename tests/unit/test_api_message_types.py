"""A message of the wrong kind given to the API is refused with one clear line.

Protobuf parses almost any bytes as almost any message, so without a check
``Profiler(op_log=<GraphDef bytes>)`` would be accepted and silently give a
profile without op-log data. The inputs here are real TensorFlow-written bytes
(a traced ``dense_net`` capture): its GraphDef, RunMetadata, the op log TF's
``write_op_log`` writes and the profile TF's ``serialize_to_string`` returns.
Every wrong combination, through every entry point (``Profiler(graph=...)``,
``Profiler(op_log=...)``, ``add_step``, ``Profiler.load``, the one-shot
``profile``/``advise``/``write_op_log``), raises an ``InvalidInputError`` naming
what was given, what was expected, what it looks like and where it goes; every
right combination works. The CLI shares the detection
(``tfprof_lite.proto.kinds``), checked last.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import tfprof_lite
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.proto import kinds

pytestmark = pytest.mark.tf

KIND_OF = {
    "graph": "GraphDef",
    "run_meta": "RunMetadata",
    "op_log": "OpLogProto",
    "profile": "ProfileProto",
}
PLACE = {
    "GraphDef": "pass it as graph=",
    "RunMetadata": "pass it to Profiler.add_step() or as run_meta=",
    "OpLogProto": "pass it as op_log=",
    "ProfileProto": "load it with Profiler.load()",
}


@pytest.fixture(scope="module")
def tf_bytes() -> dict[str, Any]:
    """TF-written bytes of each kind, plus the tf.Graph they belong to."""
    pytest.importorskip("tensorflow")
    import tensorflow as tf

    from tests.integration import tf_models

    capture = tf_models.ALL_CAPTURES["dense_net"]()
    tf1 = tf.compat.v1
    meta_bytes = capture.run_metas[-1][1]
    with tempfile.TemporaryDirectory() as tmp:
        tf1.profiler.write_op_log(capture.graph, tmp, run_meta=capture.run_metadata(-1))
        op_log = Path(tmp, "tfprof_log").read_bytes()
    prof = tf1.profiler.Profiler(capture.graph)
    prof.add_step(0, capture.run_metadata(-1))
    profile = bytes(prof.serialize_to_string())
    del prof  # its __del__ deletes TF's global profiler: do it now, not later
    gc.collect()
    return {
        "graph": capture.graph.as_graph_def().SerializeToString(),
        "run_meta": meta_bytes,
        "op_log": op_log,
        "profile": profile,
        "tf_graph": capture.graph,
    }


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def _entry_points(b: dict[str, Any]) -> dict[str, tuple[str, str, Callable[[bytes], Any]]]:
    """name -> (kind it expects, name errors use, call with the given bytes)."""
    opts = tfprof_lite.ProfileOptionBuilder.time_and_memory()
    opts["output"] = "none"
    g = b["graph"]
    return {
        "Profiler(graph=)": ("graph", "graph", lambda d: tfprof_lite.Profiler(d)),
        "Profiler(op_log=)": ("op_log", "op_log", lambda d: tfprof_lite.Profiler(g, op_log=d)),
        "add_step": ("run_meta", "run_meta", lambda d: tfprof_lite.Profiler(g).add_step(0, d)),
        "Profiler.load": ("profile", "profile", tfprof_lite.Profiler.load),
        "profile(graph=)": ("graph", "graph", lambda d: tfprof_lite.profile(d, options=opts)),
        "profile(run_meta=)": (
            "run_meta",
            "run_meta",
            lambda d: tfprof_lite.profile(g, run_meta=d, options=opts),
        ),
        "profile(op_log=)": (
            "op_log",
            "op_log",
            lambda d: tfprof_lite.profile(g, op_log=d, options=opts),
        ),
        "advise(graph=)": ("graph", "graph", lambda d: tfprof_lite.advise(d)),
        "advise(run_meta=)": ("run_meta", "run_meta", lambda d: tfprof_lite.advise(g, d)),
        "write_op_log(op_log=)": (
            "op_log",
            "op_log",
            lambda d: tfprof_lite.write_op_log(b["tf_graph"], tempfile.mkdtemp(), op_log=d),
        ),
        "write_op_log(run_meta=)": (
            "run_meta",
            "run_meta",
            lambda d: tfprof_lite.write_op_log(b["tf_graph"], tempfile.mkdtemp(), run_meta=d),
        ),
    }


ENTRY_POINTS = (
    "Profiler(graph=)",
    "Profiler(op_log=)",
    "add_step",
    "Profiler.load",
    "profile(graph=)",
    "profile(run_meta=)",
    "profile(op_log=)",
    "advise(graph=)",
    "advise(run_meta=)",
    "write_op_log(op_log=)",
    "write_op_log(run_meta=)",
)


@pytest.mark.parametrize("given", list(KIND_OF))
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_wrong_kind_is_refused_right_kind_works(
    tf_bytes: dict[str, Any], entry: str, given: str
) -> None:
    expects, what, call = _entry_points(tf_bytes)[entry]
    data = tf_bytes[given]
    if given == expects:
        with _quiet():
            call(data)
        return
    with pytest.raises(InvalidInputError) as info, _quiet():
        call(data)
    expected, actual = KIND_OF[expects], KIND_OF[given]
    assert str(info.value) == (
        f"{what}: expected {kinds.article(expected)}, but it looks like "
        f"{kinds.article(actual)}; {PLACE[actual]}"
    )


def test_tensorflow_message_of_another_type_names_its_place(tf_bytes: dict[str, Any]) -> None:
    import tensorflow as tf

    graph_def = tf_bytes["tf_graph"].as_graph_def()
    with pytest.raises(InvalidInputError) as info:
        tfprof_lite.Profiler(tf_bytes["graph"], op_log=graph_def)
    assert str(info.value) == (
        "op_log: expected a OpLogProto message, got a tensorflow.GraphDef message; "
        "pass it as graph="
    )
    meta = tf.compat.v1.RunMetadata.FromString(tf_bytes["run_meta"])
    with pytest.raises(InvalidInputError, match="; pass it to Profiler.add_step"):
        tfprof_lite.Profiler(meta)


def test_saved_profile_file_of_another_kind(tf_bytes: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "profile_3"
    path.write_bytes(tf_bytes["run_meta"])
    with pytest.raises(InvalidInputError) as info:
        tfprof_lite.Profiler.load(path)
    assert str(info.value) == (
        f"{os.fspath(path)}: expected a ProfileProto, but it looks like a RunMetadata; "
        "pass it to Profiler.add_step() or as run_meta="
    )


@pytest.mark.parametrize(
    ("option", "given", "hint"),
    [
        ("--op-log", "graph", "a GraphDef; pass it with --graph"),
        ("--op-log", "profile", "a saved profile; pass it as PROFILE"),
        ("--graph", "run_meta", "a RunMetadata; pass it with --run-meta"),
        ("--run-meta", "op_log", "an OpLogProto; pass it with --op-log"),
    ],
)
def test_cli_uses_the_same_detection(
    tf_bytes: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    option: str,
    given: str,
    hint: str,
) -> None:
    from tfprof_lite.cli import main

    files = {k: tmp_path / f"{k}.pb" for k in KIND_OF}
    for kind, path in files.items():
        path.write_bytes(tf_bytes[kind])
    args = {"--graph": files["graph"], "--run-meta": files["run_meta"], "--op-log": None}
    args[option] = files[given]
    argv = ["scope"] + [a for k, v in args.items() if v is not None for a in (k, str(v))]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"{files[given]}: not " in err
    assert f"(it looks like {hint})" in err
