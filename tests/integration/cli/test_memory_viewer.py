"""``tfprof-lite memory-viewer`` on the H100 MLP capture and on inputs it refuses."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.integration.cli.runner import fails, invoke
from tests.unit.cli import profiles
from tests.xspace_data import jax_file

#: The MLP capture's training step: XLA's "Total bytes" and its program id.
TOTAL, PROGRAM_ID = 94525324, 84048


@pytest.fixture(scope="module")
def capture() -> Path:
    """The H100 MLP XSpace (skipped where the captures are missing, failed under CI)."""
    return jax_file("jax_h100_mlp")


def test_text_of_one_program(capture: Path) -> None:
    out = invoke("memory-viewer", capture, "--program", "jit_train_step").output
    lines = out.splitlines()
    assert lines[0] == f"jit_train_step({PROGRAM_ID}) (memory space 0)"
    assert lines[1].split()[:3] == ["total", f"{TOTAL:,}", "B"]
    assert lines[2].split()[0] == "peak" and "at step" in lines[2]
    assert "largest buffers at the peak (10 of " in out
    assert "jit(train_step)/transpose(jvp(MLP))/mlp/dense1/transpose" in out  # a JAX scope


def test_every_program_with_a_buffer_assignment_largest_peak_first(capture: Path) -> None:
    out = invoke("memory-viewer", capture).output
    headers = [line for line in out.splitlines() if line.endswith("(memory space 0)")]
    assert len(headers) == 39
    assert headers[0] == f"jit_train_step({PROGRAM_ID}) (memory space 0)"


@pytest.mark.parametrize(
    "name", ["jit_train_step", f"jit_train_step({PROGRAM_ID})", str(PROGRAM_ID)]
)
def test_json_of_one_program(capture: Path, name: str) -> None:
    data = json.loads(invoke("memory-viewer", capture, "--program", name, "--json").output)
    (program,) = data["programs"]
    assert {"program", "program_id", "total_bytes", "peak_bytes", "buffers_at_peak"} <= set(program)
    assert (program["program"], program["program_id"]) == ("jit_train_step", PROGRAM_ID)
    assert program["total_bytes"] == TOTAL
    buffers = program["buffers_at_peak"]
    assert all({"bytes", "shape", "instruction", "scope"} <= set(b) for b in buffers)
    assert sum(b["bytes"] for b in buffers) == program["peak_bytes"] <= TOTAL


def test_json_of_every_program(capture: Path) -> None:
    data = json.loads(invoke("memory-viewer", capture, "--json").output)
    assert len(data["programs"]) == 39
    peaks = [p["peak_bytes"] for p in data["programs"]]
    assert peaks == sorted(peaks, reverse=True)


def test_svg_chart(capture: Path, tmp_path: Path) -> None:
    out = tmp_path / "heap.svg"
    result = invoke("memory-viewer", capture, "--program", "jit_train_step", "-o", out)
    assert result.output.startswith(f"Wrote {out} (heap of jit_train_step({PROGRAM_ID}), peak ")
    root = ET.parse(out).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert "jit_train_step(84048)" in "".join(root.itertext())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tfprof_lite-")]


def test_svg_with_json_keeps_stdout_json(capture: Path, tmp_path: Path) -> None:
    out = tmp_path / "heap.svg"
    result = invoke("memory-viewer", capture, "--json", "-o", out)
    assert json.loads(result.stdout)["programs"][0]["program"] == "jit_train_step"
    assert "the largest peak of 39 programs" in result.stderr
    assert out.stat().st_size > 0


def test_a_tf1_profile_has_no_xla_programs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = profiles.write_profile(tmp_path / "profile_2")
    err = fails(capsys, "memory-viewer", path)
    assert "holds no compiled XLA programs; pass an XSpace (*.xplane.pb)" in err
    assert str(path) in err


def test_a_missing_program_name(capture: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = fails(capsys, "memory-viewer", capture, "--program", "jit_nothing")
    assert "no XLA program named 'jit_nothing'; its programs: jit_train_step, " in err


def test_a_directory_as_output_is_refused(
    capture: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = fails(capsys, "memory-viewer", capture, "-o", tmp_path)
    assert "is a directory" in err
