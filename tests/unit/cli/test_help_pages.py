"""``tfprof-lite help``: listing and printing the documentation pages of a checkout
(an installed wheel is covered by tests/integration/cli/test_installed_help.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.cli.conftest import Runner
from tfprof_lite.cli.help import docs_root, find_page, list_pages
from tfprof_lite.errors import InvalidOptionError

REPO = Path(__file__).resolve().parents[3]


def test_the_checkout_docs_are_found() -> None:
    assert docs_root() == REPO / "docs"
    pages = list_pages()
    assert pages["options"] == REPO / "docs" / "options.md"
    assert "cli/scope" in pages and "views/scope" in pages


@pytest.mark.parametrize(
    ("name", "page"),
    [("options", "options.md"), ("scope", "cli/scope.md"), ("cli/scope.md", "cli/scope.md")],
)
def test_find_page(name: str, page: str) -> None:
    assert find_page(name) == REPO / "docs" / page


def test_unknown_and_ambiguous_names(tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match=r"no page 'optons' \(did you mean: options"):
        find_page("optons")
    for folder in ("views", "outputs"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "table.md").write_text("# t\n", encoding="utf-8")
    with pytest.raises(InvalidOptionError, match="is several pages: outputs/table, views/table"):
        find_page("table", tmp_path)
    assert find_page("views/table", tmp_path) == tmp_path / "views" / "table.md"


def test_cli_prints_a_page_and_lists_them(run: Runner) -> None:
    result = run("help", "options")
    assert result.code == 0
    assert result.out == (REPO / "docs" / "options.md").read_text(encoding="utf-8")
    index = run("help")
    assert index.code == 0
    assert any(line.startswith("options ") for line in index.out.splitlines())


def test_cli_unknown_page_is_one_line(run: Runner) -> None:
    result = run("help", "nosuchpage")
    assert result.code == 1
    assert result.err.startswith("tfprof-lite: error: help: no page 'nosuchpage'")
    assert result.err.count("\n") == 1
