"""The saved-profile decoder and encoder, the graph decoder and the scope tree
builder built with ASan and UBSan.

As :mod:`tests.unit.test_native_sanitizer` does for the step decoder:
``_profiledecode.c`` and ``_profileencode.c`` are compiled with gcc's sanitizers
and run in a child Python with ``libasan`` preloaded. The decoder reads the
hand-made profiles, every truncation of one and a seeded mutation slice; the
encoder writes the models of the hand-made cases (its arguments are prepared
here and pickled: plain lists, dicts, sets and bytes). Any sanitizer report,
crash or non-zero exit fails; the decoder must decline exactly where the regular
build does, and the encoder's bytes must equal the regular build's. The graph
decoder reads the hand-made GraphDefs and op logs and a mutation slice of each,
and a GraphDef with a function library, types and debug info (its
truncations and mutations);
the scope tree builder random name lists and lists it must decline.
"""

from __future__ import annotations

import pickle
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import tests.hand_cases as hc
import tfprof_lite
from tests.unit.test_native_sanitizer import build, libasan, problems, run_child
from tests.unit.test_profile_codec import CASES, _hand_profile, _mutations, _saved
from tfprof_lite.proto import profiles

__all__ = ["libasan"]  # the fixture, imported for this module's tests

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "tfprof_lite" / "_native"
MUTATIONS = 1500

ENCODE_CHILD = textwrap.dedent(
    """
    import hashlib, importlib, pickle, sys
    sys.path.insert(0, sys.argv[1])
    encode = importlib.import_module(sys.argv[2]).encode
    for args in pickle.load(open(sys.argv[3], "rb")):
        for _ in range(2):
            out = encode(*args)
        print(hashlib.sha256(out).hexdigest())
    """
)


def _decode_inputs() -> list[bytes]:
    rng = random.Random(7)
    seeds = [_hand_profile().SerializeToString(), _saved(hc.gpu_case())]
    cuts = [seeds[0][:n] for n in range(0, len(seeds[0]), 7)]
    mutated = [_mutations(seeds[i % 2], rng) for i in range(MUTATIONS)]
    return [*seeds, *[_saved(make()) for make in CASES], *cuts, *mutated]


def test_sanitized_profile_decoder(libasan: str, tmp_path: Path) -> None:
    module = build(tmp_path, NATIVE / "_profiledecode.c", "_profiledecode", f"-I{NATIVE}")
    inputs = _decode_inputs()
    done = run_child(libasan, module, inputs)
    assert problems(done) == [], done.stderr[-4000:]
    declined = [digest == "-" for digest in done.stdout.split()]
    assert len(declined) == len(inputs)
    assert 0 < sum(declined) < len(inputs)
    regular = profiles._native()
    if regular is not None:
        assert declined == [regular.decode(d) is None for d in inputs]


def _case_models() -> list[Any]:
    """The model of each hand-made case, its steps added."""
    models = []
    for make in CASES:
        case = make()
        prof = tfprof_lite.Profiler(case.graph_def, op_log=case.op_log or None)
        for step, meta in case.run_metas:
            prof.add_step(step, meta)
        models.append(prof.model)
    return models


def _encoder_args(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The native encoder's arguments for each hand-made case's model."""
    from tfprof_lite.model import profile_write

    captured: list[tuple[Any, ...]] = []

    class Spy:
        @staticmethod
        def encode(*args: Any) -> bytes:
            captured.append(args)
            return b""

    if profile_write._native() is None:
        pytest.skip("the native encoder is not built")
    models = [*_case_models(), tfprof_lite.Profiler.load(_hand_profile()).model]
    with monkeypatch.context() as patch:
        patch.setattr(profile_write, "_native", lambda: Spy)
        for model in models:
            profile_write.encode_bytes(model)
    return captured


def test_sanitized_profile_encoder(
    libasan: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    from tfprof_lite.model import profile_write

    module = build(tmp_path, NATIVE / "_profileencode.c", "_profileencode", f"-I{NATIVE}")
    args = _encoder_args(monkeypatch)
    data = tmp_path / "encode.pickle"
    data.write_bytes(pickle.dumps(args))
    env_argv = [str(module.parent), module.stem, str(data)]
    done = _run_child(libasan, ENCODE_CHILD, env_argv)
    assert problems(done) == [], done.stderr[-4000:]
    expected = [hashlib.sha256(profile_write._native().encode(*a)).hexdigest() for a in args]
    assert done.stdout.split() == expected


def _run_child(libasan: str, script: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    import os

    env = {
        **os.environ,
        "LD_PRELOAD": libasan,
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:exitcode=86",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=87",
    }
    env.pop("PYTHONPATH", None)
    command = [sys.executable, "-I", "-c", script, *argv]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


CALL_CHILD = textwrap.dedent(
    """
    import hashlib, importlib, pickle, sys
    sys.path.insert(0, sys.argv[1])
    module = importlib.import_module(sys.argv[2])
    for name, data in pickle.load(open(sys.argv[3], "rb")):
        for _ in range(2):
            result = getattr(module, name)(data)
        last = result[-1] if isinstance(result, tuple) else b""
        last = last if isinstance(last, bytes) else b""
        print("-" if result is None else hashlib.sha256(last).hexdigest())
    """
)


def _call_line(result: Any) -> str:
    """CALL_CHILD's line for ``result``: "-" (declined), else a hash of the bytes
    left to protobuf's check (a graph's ``wrapped``; none for the others)."""
    import hashlib

    if result is None:
        return "-"
    last = result[-1] if isinstance(result, tuple) else b""
    return hashlib.sha256(last if isinstance(last, bytes) else b"").hexdigest()


def _sanitized_lines(
    libasan: str, tmp_path: Path, name: str, script: str, calls: list[Any]
) -> list[str]:
    """The output lines of ``script`` running ``calls`` on the sanitized build of
    extension ``name``; any sanitizer report, crash or non-zero exit fails."""
    module = build(tmp_path, NATIVE / f"{name}.c", name, f"-I{NATIVE}")
    data = tmp_path / f"{name}.pickle"
    data.write_bytes(pickle.dumps(calls))
    done = _run_child(libasan, script, [str(module.parent), module.stem, str(data)])
    assert problems(done) == [], done.stderr[-4000:]
    lines: list[str] = done.stdout.split()
    return lines


def _graph_calls() -> list[tuple[str, Any]]:
    from tests.unit import graph_decode_cases as tg
    from tests.unit import test_graph_decode_unread as tu

    rng = random.Random(11)
    graph = tg._hand_graph().SerializeToString()
    functions = tu.function_graph_bytes()  # library, types, debug info
    log = tg._hand_log().SerializeToString()
    calls = [("graph", g) for g, _ in tg._raw_cases()] + [("op_log", o) for _, o in tg._raw_cases()]
    calls += [("graph", raw) for _, raw in tu._accepted() + tu._rejected()]
    calls += [("graph", tg._mutations(graph, rng)) for _ in range(MUTATIONS)]
    calls += [("graph", tg._mutations(functions, rng)) for _ in range(MUTATIONS)]
    calls += [("graph", functions[:n]) for n in range(0, len(functions), 7)]
    calls += [("op_log", tg._mutations(log, rng)) for _ in range(MUTATIONS)]
    calls += [("graph", graph[:n]) for n in range(0, len(graph), 5)]
    raws = [data for name, data in calls if name == "graph"]
    calls += [("graph_names", data) for data in raws] + [("graph_check", data) for data in raws]
    calls += [("op_type_sets", ["MatMul", "", "ü"] * 50), ("op_type_sets", [])]
    return calls


def test_sanitized_graph_decoder(libasan: str, tmp_path: Path) -> None:
    from tfprof_lite.proto import graphs

    calls = _graph_calls()
    lines = _sanitized_lines(libasan, tmp_path, "_graphdecode", CALL_CHILD, calls)
    declined = [line == "-" for line in lines]
    assert len(declined) == len(calls) and 0 < sum(declined) < len(calls)
    regular = graphs._native()
    if regular is not None:
        assert lines == [_call_line(getattr(regular, name)(d)) for name, d in calls]


def test_sanitized_graph_details(libasan: str, tmp_path: Path) -> None:
    """``graph_details`` with each mask on the graph decoder's inputs: no report,
    and the same results as the regular build."""
    from tests.unit.graph_decode_cases import _MASKS
    from tfprof_lite.proto import graphs

    raws = [data for name, data in _graph_calls() if name == "graph"]
    calls = [("graph_details", (raw, _MASKS[i % len(_MASKS)])) for i, raw in enumerate(raws)]
    lines = _sanitized_lines(libasan, tmp_path, "_graphdecode", ARGS_CHILD, calls)
    assert len(lines) == len(calls) and 0 < lines.count("-") < len(calls)
    regular = graphs._native()
    if regular is not None:
        assert lines == [_args_line(regular.graph_details(*args)) for _, args in calls]


def _args_line(result: Any) -> str:
    """ARGS_CHILD's line for ``result``."""
    import hashlib

    return "-" if result is None else hashlib.sha256(pickle.dumps(result)).hexdigest()


ARGS_CHILD = textwrap.dedent(
    """
    import hashlib, importlib, pickle, sys
    sys.path.insert(0, sys.argv[1])
    module = importlib.import_module(sys.argv[2])
    for name, args in pickle.load(open(sys.argv[3], "rb")):
        for _ in range(2):
            result = getattr(module, name)(*args)
        if result is None:
            print("-")
        else:
            print(hashlib.sha256(pickle.dumps(result)).hexdigest())
    """
)


def _view_encoder_calls() -> list[tuple[str, tuple[Any, ...]]]:
    """``heads`` and ``input_edges`` on the hand-made cases' models and random
    ones, ``frame_tree`` on random trees, ``encode_rows`` on a random matrix (with
    and without row prefixes), and arguments to decline."""
    import numpy as np

    from tests.unit import test_view_builds as tv

    rng = random.Random(5)
    models = [*_case_models(), *(tv._random_model(rng, rng.randint(0, 60)) for _ in range(20))]
    calls: list[tuple[str, tuple[Any, ...]]] = [("heads", tv._heads_args(m)) for m in models]
    calls += [("input_edges", (m.inputs, m.index)) for m in models]
    calls.append(("input_edges", ([{"0": "a"}], {})))
    odd = tv._random_model(rng, 5)
    odd.output_shapes[0] = {0: [1 << 64]}
    calls.append(("heads", tv._heads_args(odd)))
    for _ in range(20):
        streams, parent, _levels = tv._random_tree(rng, rng.randint(1, 200))
        calls.append(("frame_tree", (streams, parent.tobytes(), b"\x62")))
    bad = np.array([-1, 1], dtype=np.int64).tobytes()
    calls.append(("frame_tree", ([[b"a", b"b"]], bad, b"\x62")))
    values = np.random.default_rng(5).integers(-(1 << 62), 1 << 62, (500, 7), dtype=np.int64)
    values[values % 3 == 0] = 0
    tags = [bytes([k << 3]) for k in range(1, 7)] + [b"\x80\x10"]
    calls.append(("encode_rows", (values.tobytes(), tags)))
    calls.append(("encode_rows", (values.tobytes()[:-8], tags)))
    heads = [bytes(range(k % 40)) for k in range(500)]
    calls.append(("encode_rows", (values.tobytes(), tags, heads)))
    calls.append(("encode_rows", (values.tobytes(), tags, heads[:-1])))
    return calls


def test_sanitized_view_encoders(libasan: str, tmp_path: Path) -> None:
    calls = _view_encoder_calls()
    lines = _sanitized_lines(libasan, tmp_path, "_profileencode", ARGS_CHILD, calls)
    assert len(lines) == len(calls) and 0 < lines.count("-") < len(calls)
    regular = _regular_lines("_profileencode", calls)
    if regular is not None:
        assert lines == regular


def _regular_lines(module: str, calls: list[tuple[str, tuple[Any, ...]]]) -> list[str] | None:
    """What ``ARGS_CHILD`` prints for ``calls`` on the regular build of extension
    ``module`` (None when it is not built)."""
    import hashlib

    from tfprof_lite._native import load

    regular = load(module)
    if regular is None:
        return None
    lines = []
    for name, args in calls:
        result = getattr(regular, name)(*args)
        lines.append("-" if result is None else hashlib.sha256(pickle.dumps(result)).hexdigest())
    return lines


def _scope_tree_calls() -> list[tuple[str, tuple[Any, ...]]]:
    """``scope_tree`` on random names (deep, wide, multi-byte, leading, trailing
    and repeated ``/``) and on names to decline."""
    rng = random.Random(9)
    alphabet = "ab/-ü😀\n"
    calls: list[tuple[str, tuple[Any, ...]]] = []
    for trial in range(60):
        count = rng.randint(0, 300)
        size = 3 + trial % 40
        words = ("".join(rng.choices(alphabet, k=rng.randint(0, size))) for _ in range(count))
        calls.append(("scope_tree", (list(set(words)),)))
    calls.append(("scope_tree", (["/" * 300, "x/" * 200],)))
    calls += [("scope_tree", (bad,)) for bad in (["a\0"], ["a", "a"], ["\ud800"], [1], ("a",))]
    return calls


def test_sanitized_scope_tree(libasan: str, tmp_path: Path) -> None:
    calls = _scope_tree_calls()
    lines = _sanitized_lines(libasan, tmp_path, "_scopetree", ARGS_CHILD, calls)
    assert len(lines) == len(calls) and lines.count("-") == 5
    regular = _regular_lines("_scopetree", calls)
    if regular is not None:
        assert lines == regular


def test_sanitized_op_log_merge(libasan: str, tmp_path: Path) -> None:
    """``merge_op_log`` on random columns (each call runs twice on its arguments)."""
    from tests.unit import graph_decode_cases as tg

    rng = random.Random(13)
    calls = [("merge_op_log", tg.merge_case(rng, n)) for n in (0, 1, 3, 40, 300)]
    lines = _sanitized_lines(libasan, tmp_path, "_graphdecode", ARGS_CHILD, calls)
    assert len(lines) == len(calls) and "-" not in lines
    regular = _regular_lines("_graphdecode", calls)
    if regular is not None:
        assert lines == regular
