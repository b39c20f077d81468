"""What ``--help`` points to exists in an installed package.

A wheel is built from a copy of the sources (``pip wheel --no-deps``, without
build isolation when the venv has setuptools and wheel) and unpacked into a
directory that stands for site-packages; the CLI then runs from there, with the
checkout off ``sys.path``.
Every ``--help`` text is collected; each ``tfprof-lite help PAGE`` it mentions
must print a page of the installed package, no checkout path (``docs/...``) may
appear, and the only URLs allowed are viewers that are not files
(``chrome://tracing``).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
SOURCES = ("tfprof_lite", "docs", "setup.py", "setup.cfg", "pyproject.toml", "README.md")
SOURCES_OPTIONAL = ("MANIFEST.in",)
ALLOWED_URLS = {"chrome://tracing"}

#: Prints {command: its --help text} for the group and every command, as JSON.
_COLLECT = """
import contextlib, io, json, sys
import tfprof_lite
from tfprof_lite.cli import COMMANDS, main
assert tfprof_lite.__file__.startswith(sys.argv[1]), tfprof_lite.__file__
texts = {}
for name in ["", *COMMANDS]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([name, "--help"] if name else ["--help"])
    assert code == 0, name
    texts[name] = out.getvalue()
print(json.dumps(texts))
"""


def _copy_sources(target: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "_docs")
    for name in SOURCES + SOURCES_OPTIONAL:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, target / name, ignore=ignore)
        elif src.exists():
            shutil.copyfile(src, target / name)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the unpacked wheel, as site-packages would."""
    root = tmp_path_factory.mktemp("wheel")
    src, dist, site = root / "src", root / "dist", root / "site"
    src.mkdir()
    _copy_sources(src)
    # Without build isolation when this venv can build (fast, offline); otherwise pip
    # fetches setuptools and wheel into an isolated build environment.
    offline = all(importlib.util.find_spec(m) is not None for m in ("setuptools", "wheel"))
    isolation = ["--no-build-isolation"] if offline else []
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q"]
        + ["-w", str(dist), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = dist.glob("tfprof_lite-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def _run(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs Python with only the unpacked wheel (and the venv) importable."""
    code = f"import sys; sys.path.insert(0, {str(site)!r}); " + args[0]
    return subprocess.run(
        [sys.executable, "-c", code, *args[1:]],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "COLUMNS": "100"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _help_texts(site: Path, cwd: Path) -> dict[str, str]:
    proc = _run(site, _COLLECT, str(site), cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    texts: dict[str, str] = json.loads(proc.stdout)
    return texts


def test_the_wheel_ships_the_docs(site: Path) -> None:
    shipped = sorted(
        p.relative_to(site / "tfprof_lite" / "_docs").as_posix()
        for p in (site / "tfprof_lite" / "_docs").rglob("*.md")
    )
    in_repo = sorted(p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md"))
    assert shipped == in_repo
    assert "options.md" in shipped


def test_everything_help_mentions_is_installed(site: Path, tmp_path: Path) -> None:
    texts = _help_texts(site, tmp_path)
    everything = "\n".join(texts.values())
    pages = set(re.findall(r"tfprof-lite help ([A-Za-z0-9_/.-]+)", everything))
    assert "options" in pages  # the tfprof options point there
    # A checkout path (docs/options.md) means nothing to an installed user.
    assert re.findall(r"\bdocs/\S+", everything) == [], "use 'tfprof-lite help PAGE'"
    urls = set(re.findall(r"\b[a-z]+://[^\s)'\"]+", everything))
    assert urls <= ALLOWED_URLS, urls - ALLOWED_URLS
    main = "from tfprof_lite.cli import main; sys.exit(main(sys.argv[1:]))"
    for page in sorted(pages):
        proc = _run(site, main, "help", page.rstrip("."), cwd=tmp_path)
        assert proc.returncode == 0, (page, proc.stderr)
        assert proc.stdout.startswith("# "), page
    options = _run(site, main, "help", "options", cwd=tmp_path).stdout
    assert options == (REPO / "docs" / "options.md").read_text(encoding="utf-8")
    index = _run(site, main, "help", cwd=tmp_path)
    assert index.returncode == 0 and "cli/scope" in index.stdout
