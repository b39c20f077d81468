"""Advice and report that fit a TF2/Keras/JAX profile, on real captures.

* No TF1-only instruction (op logs, ``xla_compat.annotate``, 0us graph nodes)
  in ``advise`` or the report of the JAX H100 samples, the JAX CPU training
  capture and a TF 2.21 Keras ``fit`` capture.
* Report cards and cells the profile cannot have read ``not recorded``.
* On a many-step XSpace (a sample's lines repeated, as the benchmark's
  ``make_xspace.py`` does) ``memory`` and ``advise`` stay within a bound, and
  ``--per-step`` / ``--steps`` print the per-step detail.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from tests.integration.step_captures import keras_fit
from tests.xspace_data import JAX_CASES, jax_file
from tfprof_lite.advisor import CHECKER_ORDER, run_advisor
from tfprof_lite.analysis.profile_kind import profile_kind
from tfprof_lite.cli import main
from tfprof_lite.profiler import Profiler
from tfprof_lite.report import render_html

#: Text that only a TF1 graph profile can act on.
TF1_ONLY = (
    "op_log",
    "Missing RunMetadata",
    "xla_compat.annotate",
    "graph node:",
    "FULL_TRACE",
    "run with an op log",
)
_MAKER = Path(__file__).resolve().parents[2] / "benchmarks" / "make_xspace.py"


def _advice(path: Path, per_step: bool = False) -> str:
    model = Profiler.load(str(path)).model
    return run_advisor(model, {name: {} for name in CHECKER_ORDER}, per_step).text


def _assert_no_tf1_text(text: str) -> None:
    for phrase in TF1_ONLY:
        assert phrase not in text, phrase
    assert not re.search(r"top \d+ scope: .*total: 0us$", text, re.M)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main([*args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("case", JAX_CASES)
def test_jax_samples_get_jax_advice(case: str) -> None:
    path = jax_file(case)
    model = Profiler.load(str(path)).model
    assert profile_kind(model) == "jax"
    text = run_advisor(model, {name: {} for name in CHECKER_ORDER}).text
    _assert_no_tf1_text(text)
    assert "not applicable to a JAX profile" in text
    html = render_html(model)
    _assert_no_tf1_text(html)
    for card in ("Parameters", "FLOPs per step (nodes that ran)"):
        assert f'<div class="k">{card}</div><div class="v">not recorded</div>' in html
    assert ">not recorded</td>" in html  # Runs of the GPU ops
    assert "<th" in html and ">Params</th>" not in html


def test_jax_cpu_training_capture(
    jax_train: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    model = Profiler.load(jax_train["xspace"]).model
    assert profile_kind(model) == "jax"
    _assert_no_tf1_text(run_advisor(model, {name: {} for name in CHECKER_ORDER}).text)
    _assert_no_tf1_text(render_html(model))
    memory = _cli(capsys, "memory", jax_train["xspace"])
    assert len(memory.splitlines()) <= 40  # a summary, whatever the records


def test_keras_capture_gets_tf2_advice(caplog: pytest.LogCaptureFixture) -> None:
    model = Profiler.load(str(keras_fit().xplane)).model
    assert profile_kind(model) == "tf2"
    with caplog.at_level("WARNING", logger="tfprof_lite"):
        text = run_advisor(model, {name: {} for name in CHECKER_ORDER}).text
    _assert_no_tf1_text(text + caplog.text)
    assert "python_tracer_level=1" in caplog.text
    assert "not applicable to a TF2 XSpace" in text
    assert "top 1 scope: StatefulPartitionedCall" in text
    html = render_html(model)
    _assert_no_tf1_text(html)
    assert '<div class="k">Parameters</div><div class="v">not recorded</div>' in html
    assert "python_tracer_level=1" in html


@pytest.fixture(scope="module")
def many_steps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The JAX MLP sample grown to about 4 MB (64 steps) and its step count."""
    spec = importlib.util.spec_from_file_location("make_xspace", _MAKER)
    assert spec is not None and spec.loader is not None
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    out = tmp_path_factory.mktemp("many") / "many.xplane.pb"
    maker.grow(str(jax_file(JAX_CASES[0])), str(out), 4)
    return out, len(Profiler.load(str(out)).model.steps)


def test_many_step_memory_is_a_bounded_summary(
    many_steps: tuple[Path, int], capsys: pytest.CaptureFixture[str]
) -> None:
    path, steps = many_steps
    assert steps >= 60
    text = _cli(capsys, "memory", str(path))
    assert len(text.splitlines()) <= 40
    assert f"memory of the {steps} traced steps" in text
    assert "GPU_0_bfc: highest peak" in text
    every = _cli(capsys, "memory", str(path), "--per-step")
    assert len(re.findall(r"^step \d+ \(", every, re.M)) == steps
    some = _cli(capsys, "memory", str(path), "--steps", "3-5,9")
    assert re.findall(r"^step (\d+) \(", some, re.M) == ["3", "4", "5", "9"]


def test_many_step_advice_groups_steps(many_steps: tuple[Path, int]) -> None:
    path, steps = many_steps
    text = _advice(path)
    assert len(text.splitlines()) <= 80
    assert re.search(r"^GPU_0_bfc: steps \d+, \d+, ", text, re.M)
    detail = _advice(path, per_step=True)
    assert len(re.findall(r"^step \d+, GPU_0_bfc: peak", detail, re.M)) == steps
    _assert_no_tf1_text(text)
