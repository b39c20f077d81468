"""Differential tests of ``tfprof_lite.options`` against TensorFlow 2.21 itself.

* ``ProfileOptionBuilder``: every preset and every method (several arguments, on
  the default builder and on each preset) builds a dict equal to TF's.
* ``Options.from_dict`` holds what TF's ``_build_options`` + C++ ``Options`` hold.
* ``Options.block_text`` equals the Options block TF prints for ``-output stdout``;
  ``parse_output`` errors and the ``dump_to_file`` note equal TF's stderr.

TF is driven through the one-shot ``tf.compat.v1.profiler.profile`` (a stack-local
C++ TFStats), so the process-wide profiler used by other tests is never touched.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any, Callable

import pytest

from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.options import Options, ProfileOptionBuilder, parse_output

tf = pytest.importorskip("tensorflow")
tf1 = tf.compat.v1
TfBuilder = tf1.profiler.ProfileOptionBuilder

pytestmark = pytest.mark.tf

PRESETS = ["trainable_variables_parameter", "float_operation", "time_and_memory"]

# (method name, positional args, keyword args)
METHOD_CASES: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("with_max_depth", (0,), {}),
    ("with_max_depth", (7,), {}),
    ("with_max_depth", (-1,), {}),
    ("with_min_memory", (), {}),
    ("with_min_memory", (5,), {}),
    ("with_min_memory", (), {"min_peak_bytes": 3, "min_output_bytes": 9}),
    ("with_min_memory", (1, 2, 3, 4), {}),
    ("with_min_execution_time", (), {}),
    ("with_min_execution_time", (10,), {}),
    ("with_min_execution_time", (), {"min_accelerator_micros": 2, "min_cpu_micros": 3}),
    ("with_min_parameters", (0,), {}),
    ("with_min_parameters", (1000,), {}),
    ("with_min_occurrence", (2,), {}),
    ("with_min_float_operations", (1,), {}),
    ("with_min_float_operations", (10**12,), {}),
    ("with_accounted_types", ([],), {}),
    ("with_accounted_types", ([".*gpu:0.*", "MatMul"],), {}),
    ("with_accounted_types", (("Conv2D",),), {}),
    ("with_node_names", (), {}),
    ("with_node_names", ([".*dense.*"],), {}),
    ("with_node_names", (), {"show_name_regexes": ["a"], "hide_name_regexes": ["b"]}),
    ("with_node_names", (), {"trim_name_regexes": [".*grad.*"], "start_name_regexes": []}),
    ("with_node_names", (["s"], ["sh"], ["h"], ["t"]), {}),
    ("account_displayed_op_only", (True,), {}),
    ("account_displayed_op_only", (False,), {}),
    ("with_empty_output", (), {}),
    ("with_stdout_output", (), {}),
    ("with_file_output", ("/tmp/report.txt",), {}),
    ("with_timeline_output", ("/tmp/timeline.json",), {}),
    ("with_pprof_output", ("/tmp/profile.pb.gz",), {}),
    ("order_by", ("micros",), {}),
    ("order_by", ("bogus",), {}),
    ("select", (["bytes", "micros", "bytes"],), {}),
    ("select", ([],), {}),
    ("with_step", (0,), {}),
    ("with_step", (-1,), {}),
    ("with_step", (12,), {}),
]

TIME_AND_MEMORY_ARGS: list[dict[str, int]] = [
    {},
    {"min_micros": 0, "min_bytes": 0},
    {"min_accelerator_micros": 5, "min_cpu_micros": 6, "min_peak_bytes": 7},
    {"min_residual_bytes": 8, "min_output_bytes": 9, "min_micros": 100},
]


def _case_id(case: tuple[str, tuple[Any, ...], dict[str, Any]]) -> str:
    name, args, kwargs = case
    return f"{name}{args}{kwargs}"


# ------------------------------------------------------------------ builder


def test_public_methods_are_tf_s() -> None:
    def public(cls: type) -> set[str]:
        return {n for n in vars(cls) if not n.startswith("_")}

    # TF's methods, plus our one extension (the code view's user-code mode)
    assert public(ProfileOptionBuilder) == public(TfBuilder) | {"with_user_code"}


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_equal_tf(preset: str) -> None:
    assert getattr(ProfileOptionBuilder, preset)() == getattr(TfBuilder, preset)()


@pytest.mark.parametrize("kwargs", TIME_AND_MEMORY_ARGS)
def test_time_and_memory_arguments_equal_tf(kwargs: dict[str, int]) -> None:
    assert ProfileOptionBuilder.time_and_memory(**kwargs) == TfBuilder.time_and_memory(**kwargs)


def test_default_builder_equals_tf() -> None:
    assert ProfileOptionBuilder().build() == TfBuilder().build()


@pytest.mark.parametrize("start", [None, *PRESETS])
@pytest.mark.parametrize("case", METHOD_CASES, ids=_case_id)
def test_method_equals_tf(
    start: str | None, case: tuple[str, tuple[Any, ...], dict[str, Any]]
) -> None:
    name, args, kwargs = case

    def run(cls: Any) -> dict[str, Any]:
        builder = cls(getattr(cls, start)()) if start else cls()
        returned = getattr(builder, name)(*args, **kwargs)
        assert returned is builder
        result: dict[str, Any] = builder.build()
        return result

    assert run(ProfileOptionBuilder) == run(TfBuilder)


def test_chained_calls_equal_tf() -> None:
    def chain(cls: Any) -> dict[str, Any]:
        result: dict[str, Any] = (
            cls(cls.float_operation())
            .with_max_depth(3)
            .with_node_names(show_name_regexes=["x.*"])
            .select(["float_ops", "params"])
            .order_by("params")
            .with_timeline_output("/tmp/t.json")
            .with_step(2)
            .build()
        )
        return result

    assert chain(ProfileOptionBuilder) == chain(TfBuilder)


# ------------------------------------------------------------------ Options vs _build_options

DICTS: list[dict[str, Any]] = [
    {},
    TfBuilder().build(),
    TfBuilder.trainable_variables_parameter(),
    TfBuilder.float_operation(),
    TfBuilder.time_and_memory(),
    {"max_depth": 2**32 + 3, "select": ["params", "bytes", "params"], "step": 4},
    {"order_by": "bogus", "select": ["nope"], "account_displayed_op_only": 1},
    {"hide_name_regexes": ("a", "b"), "output": "timeline:outfile=/tmp/x=y"},
]


@pytest.mark.parametrize("d", DICTS)
def test_from_dict_matches_build_options(d: dict[str, Any]) -> None:
    from tensorflow.python.profiler.model_analyzer import _build_options

    proto = _build_options(d)
    ours = Options.from_dict(d)
    for name in ours.to_dict():
        if name in ("output", "select", "max_depth"):
            continue
        expected = getattr(proto, name)
        got = getattr(ours, name)
        assert (tuple(expected) if isinstance(got, tuple) else expected) == got, name
    assert ours.select == tuple(sorted(set(proto.select)))  # C++ keeps a std::set
    assert ours.max_depth == ctypes.c_int32(proto.max_depth).value  # C++ int
    assert ours.output == parse_output(proto.output)


# ------------------------------------------------------------------ TF's printed text


@pytest.fixture(scope="module")
def graph() -> Any:
    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [2, 3], name="x")
        tf.identity(x, name="y")
    return g


@pytest.fixture
def run_tf(graph: Any, capfd: pytest.CaptureFixture[str]) -> Callable[[dict[str, Any]], Any]:
    """Runs TF's one-shot scope profile; returns (stdout, stderr) of the C++ side."""
    libc = ctypes.CDLL(None)

    def run(options: dict[str, Any]) -> Any:
        capfd.readouterr()
        tf1.profiler.profile(graph, cmd="scope", options=options)
        libc.fflush(None)
        return capfd.readouterr()

    return run


def _options_block(stdout: str) -> str:
    banner = "=========================Options=============================\n"
    start = stdout.index(banner) + len(banner)
    return stdout[start : stdout.index("\n\n", start) + 1]


BLOCK_DICTS: list[dict[str, Any]] = [
    TfBuilder().with_max_depth(1).build(),
    dict(TfBuilder.time_and_memory(min_peak_bytes=5), max_depth=1),
    dict(TfBuilder.float_operation(), max_depth=2**32 + 1, output=""),
    {
        "max_depth": 1,
        "select": ["params", "bytes", "params", "device"],
        "hide_name_regexes": ["a.*", "b"],
        "order_by": "whatever",
        "step": 3,
        "account_displayed_op_only": True,
        "output": "stdout:",
    },
]


@pytest.mark.parametrize("d", BLOCK_DICTS)
def test_block_text_equals_tf(d: dict[str, Any], run_tf: Callable[..., Any]) -> None:
    out = run_tf(d).out
    assert Options.from_dict(d).block_text() == _options_block(out)


BAD_OUTPUTS = [
    "foo",
    "foo:outfile=x",
    ":outfile=x",
    "STDOUT",
    "timeline",
    "timeline:",
    "file:,,",
    "pprof:outfile",
    "timeline:outfile=",
    "file:=x",
    "none:a",
    "timeline:a=b",
    "stdout:outfile=x",
    "none:x=1,y",
    "file:x,outfile=y",
]


@pytest.mark.parametrize("output", BAD_OUTPUTS)
def test_output_errors_equal_tf_stderr(output: str, run_tf: Callable[..., Any]) -> None:
    err = run_tf(dict(TfBuilder().with_max_depth(1).build(), output=output)).err
    with pytest.raises(InvalidOptionError) as info:
        parse_output(output)
    # Our list of valid types adds json, csv and collapsed to TF's.
    ours = str(info.value).replace(
        "collapsed,csv,file,json,none,pprof,stdout,timeline", "file,none,pprof,stdout,timeline"
    )
    assert f"INVALID_ARGUMENT: {ours}\n" in err


def test_dump_to_file_note_equals_tf(
    run_tf: Callable[..., Any], tmp_path: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    path = os.fspath(tmp_path / "dump.txt")
    d = dict(TfBuilder().with_max_depth(1).build(), output="none", dump_to_file=path)
    tf_err = run_tf(d).err
    assert os.path.exists(path)
    ours = Options.from_dict(d)
    assert ours.output.type == "file" and ours.output.outfile == path
    our_err = capfd.readouterr().err
    assert our_err.startswith("-dump_to_file option is deprecated.")
    assert our_err in tf_err
