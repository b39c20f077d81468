"""render(): output files, atomic writes and one-line errors, with a fake ``dot``.

The real ``dot`` is exercised in tests/integration/test_xla.py; here a small
shell script stands in for it so the error paths are deterministic. The last
tests run ``tfprof-lite hlo`` in a new process with the ``graphviz`` Python
package hidden, once with the real ``dot`` and once with none on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_xla_dot import XLA_STYLE
from tfprof_lite import xla
from tfprof_lite.errors import InvalidOptionError, MissingDependencyError

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")
DUMP_NAME = "module_0001.cluster_1__X_.2.cpu_after_optimizations.dot"


@pytest.fixture
def dump(tmp_path: Path) -> xla.HloModuleDump:
    (tmp_path / DUMP_NAME).write_text(XLA_STYLE, encoding="utf-8")
    (found,) = xla.find_dumps(tmp_path)
    return found


def _fake_dot(directory: Path, body: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Put an executable ``dot`` running ``body`` first on PATH."""
    directory.mkdir()
    script = directory / "dot"
    script.write_text(f"#!/bin/sh\ncat >/dev/null\n{body}\n", encoding="utf-8")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ.get('PATH', '')}")


def test_dot_format_writes_the_prepared_text_without_graphviz(
    dump: xla.HloModuleDump, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setitem(sys.modules, "graphviz", None)  # type: ignore[arg-type]
    (out,) = xla.render(dump, tmp_path / "new" / "dir", ("dot",))
    assert out.name == "module_0001.cluster_1.cpu_after_optimizations.dot"
    assert out.read_text(encoding="utf-8") == xla.prepare_dot(dump)
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]  # no temp files


def test_render_pipes_through_dot_once_per_format(
    dump: xla.HloModuleDump, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_dot(tmp_path / "bin", 'printf "drawn"', monkeypatch)
    paths = xla.render(dump, tmp_path / "out", ["svg", "png"], focus="dot.1")
    stem = "module_0001.cluster_1.cpu_after_optimizations.focus-dot.1"
    assert [p.name for p in paths] == [f"{stem}.svg", f"{stem}.png"]
    assert all(p.read_bytes() == b"drawn" for p in paths)


def test_failing_dot_is_one_line(
    dump: xla.HloModuleDump, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_dot(
        tmp_path / "bin", 'echo "Error: boom in line 3" >&2\necho more >&2\nexit 1', monkeypatch
    )
    with pytest.raises(xla.RenderError) as info:
        xla.render(dump, tmp_path / "out", ("svg",))
    assert str(info.value) == (
        "dot failed on module_0001.cluster_1.cpu_after_optimizations (svg): Error: boom in line 3"
    )
    assert not (tmp_path / "out" / "module_0001.cluster_1.cpu_after_optimizations.svg").exists()


def test_missing_dot_names_the_package_to_install(
    dump: xla.HloModuleDump, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(MissingDependencyError, match="apt-get install graphviz") as info:
        xla.render(dump, tmp_path / "out", ("svg",))
    assert "\n" not in str(info.value)


def test_the_graphviz_package_is_not_needed(
    dump: xla.HloModuleDump, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)  # type: ignore[arg-type]
    _fake_dot(tmp_path / "bin", 'printf "drawn by $1"', monkeypatch)
    (path,) = xla.render(dump, tmp_path / "out", ("png",))
    assert path.read_bytes() == b"drawn by -Tpng"


def test_dot_taking_too_long_is_stopped(
    dump: xla.HloModuleDump, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_dot(tmp_path / "bin", "exec sleep 30", monkeypatch)
    monkeypatch.setattr(sys.modules["tfprof_lite.xla.render"], "DOT_TIMEOUT", 0.5)
    with pytest.raises(xla.RenderError, match=r"dot did not finish within 0.5s on module_0001"):
        xla.render(dump, tmp_path / "out", ("svg",))
    assert list((tmp_path / "out").iterdir()) == []


#: Runs the CLI with the graphviz Python package made unimportable.
_NO_GRAPHVIZ = (
    "import sys; sys.modules['graphviz'] = None; "
    "from tfprof_lite.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _hlo_cli(cwd: Path, path: str, *args: str) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PATH=path, PYTHONPATH=str(root), NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-c", _NO_GRAPHVIZ, "hlo", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@needs_dot
def test_cli_draws_with_dot_and_without_the_graphviz_package(
    dump: xla.HloModuleDump, tmp_path: Path
) -> None:
    proc = _hlo_cli(tmp_path, os.environ["PATH"], str(dump.path), "-o", "m.svg")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Wrote m.svg (module_0001 cluster_1")
    svg = (tmp_path / "m.svg").read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg


def test_cli_without_dot_is_one_line_and_dot_text_still_works(
    dump: xla.HloModuleDump, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = _hlo_cli(tmp_path, str(empty), str(dump.path), "-o", "m.svg")
    assert proc.returncode == 1
    assert proc.stderr == (
        "tfprof-lite: error: Graphviz's dot program is not on PATH; "
        "install Graphviz (Debian/Ubuntu: apt-get install graphviz)\n"
    )
    assert not (tmp_path / "m.svg").exists()
    proc = _hlo_cli(tmp_path, str(empty), str(dump.path), "--format", "dot", "-o", "m.dot")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "m.dot").read_text(encoding="utf-8") == xla.prepare_dot(dump)


@pytest.mark.parametrize(
    ("formats", "message"),
    [((), "formats is empty"), (("svg", "nope"), "unknown Graphviz output format")],
)
def test_bad_formats(
    dump: xla.HloModuleDump, tmp_path: Path, formats: tuple[str, ...], message: str
) -> None:
    with pytest.raises(InvalidOptionError, match=message):
        xla.render(dump, tmp_path, formats)


def test_a_text_dump_renders_its_dot_sibling(dump: xla.HloModuleDump, tmp_path: Path) -> None:
    txt = dump.path.with_name(DUMP_NAME.replace(".dot", ".txt"))
    txt.write_text("HloModule m\n", encoding="utf-8")
    record = xla.parse_dump_name(txt)
    assert record is not None
    assert xla.prepare_dot(record) == xla.prepare_dot(dump)
    dump.path.unlink()
    with pytest.raises(xla.HloDumpError, match="no .dot dump of this module"):
        xla.render(record, tmp_path / "out", ("dot",))
