"""``memory`` and ``kernels`` on real TensorFlow captures and hand-made GPU records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tfprof_lite
from tests.integration.cli.runner import fails, invoke
from tfprof_lite.analysis.kernels import kernel_stats
from tfprof_lite.analysis.memory import memory_profile

pytestmark = pytest.mark.tf
tf_models = pytest.importorskip("tests.integration.tf_models")
from tests.unit.test_memory_kernels import _tf2_gpu_meta  # noqa: E402


@pytest.fixture(scope="module")
def dense(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], tfprof_lite.Profiler]:
    root = tmp_path_factory.mktemp("memory_cli")
    capture = tf_models.ALL_CAPTURES["dense_net"]()
    prof = tfprof_lite.Profiler()
    paths = []
    for index, (step, data) in enumerate(capture.run_metas):
        prof.add_step(step, data)
        path = root / f"rm{index}.pb"
        path.write_bytes(data)
        paths.append(path)
    return paths, prof


def test_memory_matches_the_analysis(dense: tuple[list[Path], tfprof_lite.Profiler]) -> None:
    paths, prof = dense
    metas = ",".join(map(str, paths))
    expected = memory_profile(prof.model, None, 10, None)
    assert invoke("memory", "--run-meta", metas, "--all-steps").output == expected.to_text()
    doc = json.loads(invoke("memory", "--run-meta", metas, "--json").output)
    assert doc == json.loads(json.dumps(expected.to_dict()))
    assert [s["step"] for s in doc["steps"]] == prof.model.sorted_steps()
    cpu = doc["steps"][0]["allocators"][0]
    assert cpu["peak_bytes"] == max(b for _, b in cpu["timeline"]) > 0


def test_memory_one_step_and_top(dense: tuple[list[Path], tfprof_lite.Profiler]) -> None:
    paths, prof = dense
    last = prof.model.sorted_steps()[-1]
    metas = ",".join(map(str, paths))
    doc = json.loads(
        invoke("memory", "--run-meta", metas, "--step", last, "--top", 2, "--json").output
    )
    assert [s["step"] for s in doc["steps"]] == [last]
    assert all(len(a["by_op"]) <= 2 for a in doc["steps"][0]["allocators"])


def test_missing_step_is_one_line(
    dense: tuple[list[Path], tfprof_lite.Profiler], capsys: pytest.CaptureFixture[str]
) -> None:
    paths, _ = dense
    err = fails(capsys, "memory", "--run-meta", paths[0], "--step", "999")
    assert "no step 999" in err


def test_kernels_on_cpu_profile_say_why(dense: tuple[list[Path], tfprof_lite.Profiler]) -> None:
    paths, prof = dense
    text = invoke("kernels", "--run-meta", ",".join(map(str, paths))).output
    assert text == kernel_stats(prof.model).to_text()
    assert "no GPU kernel records" in text


def test_kernels_on_gpu_records(tmp_path: Path) -> None:
    meta = tmp_path / "gpu.pb"
    meta.write_bytes(_tf2_gpu_meta().SerializeToString())
    text = invoke("kernels", "--run-meta", meta).output
    assert "volta_sgemm_128x64_nn <- a/mm (MatMul)" in text
    doc = json.loads(invoke("kernels", "--run-meta", meta, "--top", 2, "--json").output)
    prof = tfprof_lite.Profiler()
    prof.add_step(0, meta.read_bytes())
    assert doc == json.loads(json.dumps(kernel_stats(prof.model, top=2).to_dict()))
    assert len(doc["kernels"]) == 2 and doc["kernels"][0]["kernel"] == "volta_sgemm_128x64_nn"
