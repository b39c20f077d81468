"""``tfprof-lite help [PAGE]``: the documentation pages, readable where the package is.

Contract:

* The pages are the Markdown files of the project's ``docs/`` directory. A built
  package (wheel, ``pip install``) carries them as package data in
  ``tfprof_lite/_docs/`` (``setup.py`` copies them at build time); a source
  checkout (or an editable install) reads ``docs/`` next to the package.
  :func:`docs_root` says which directory is used.
* ``tfprof-lite help`` lists every page: its name (its path under ``docs/``
  without ``.md``, e.g. ``options``, ``cli/scope``, ``views/scope``) and title.
* ``tfprof-lite help PAGE`` prints one page as it is written (Markdown). ``PAGE``
  is a name as listed, or a command (``scope`` is ``cli/scope``), or a file name
  found in only one place (``chrome_trace``). An unknown or ambiguous name is an
  error line naming the candidates (exit 1). No page is found at all (a broken
  install) is an error too.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import click

from tfprof_lite.base.reading import read_input
from tfprof_lite.base.writing import write_stdout
from tfprof_lite.cli.common import TfprofCommand
from tfprof_lite.errors import InvalidOptionError, TfprofLiteError

__all__ = ["HELP_COMMANDS", "docs_root", "find_page", "help_command", "list_pages"]

_PACKAGE = Path(__file__).resolve().parents[1]


def docs_root() -> Path:
    """The directory of the documentation pages: the packaged copy, else the checkout's."""
    for candidate in (_PACKAGE / "_docs", _PACKAGE.parent / "docs"):
        if (candidate / "options.md").is_file():
            return candidate
    raise TfprofLiteError(f"no documentation pages in {_PACKAGE / '_docs'}; reinstall tfprof-lite")


def list_pages(root: Path | None = None) -> dict[str, Path]:
    """Every page by name (its path under the docs directory without ``.md``)."""
    root = docs_root() if root is None else root
    pages = sorted(root.rglob("*.md"))
    return {p.relative_to(root).with_suffix("").as_posix(): p for p in pages}


def find_page(name: str, root: Path | None = None) -> Path:
    """The page ``name`` designates (see the module docstring).

    Raises:
        InvalidOptionError: no page, or several pages, match.
    """
    pages = list_pages(root)
    key = name.strip().removesuffix(".md").strip("/")
    for candidate in (key, f"cli/{key}"):
        if candidate in pages:
            return pages[candidate]
    by_stem = [n for n in pages if n.rsplit("/", 1)[-1] == key]
    if len(by_stem) == 1:
        return pages[by_stem[0]]
    if by_stem:
        raise InvalidOptionError(f"help: {name!r} is several pages: {', '.join(by_stem)}")
    close = difflib.get_close_matches(key, list(pages), n=4, cutoff=0.5)
    hint = f" (did you mean: {', '.join(close)}?)" if close else ""
    raise InvalidOptionError(f"help: no page {name!r}{hint}; 'tfprof-lite help' lists the pages")


def _title(path: Path) -> str:
    """The first ``# `` heading of a page (its file name when it has none)."""
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("# "):
                return line[2:].strip().replace("`", "")
    return path.stem


def format_index(root: Path | None = None) -> str:
    """One line per page: its name and title."""
    pages = list_pages(root)
    width = max(len(n) for n in pages)
    lines = [f"{name.ljust(width)}  {_title(path)}" for name, path in pages.items()]
    return "\n".join(lines) + "\n"


@click.command(
    "help",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="Print a documentation page (help options, help scope).",
)
@click.argument("page", required=False)
def help_command(page: str | None) -> None:
    """Prints one of the documentation pages installed with tfprof-lite (Markdown),
    or, without PAGE, lists them.

    PAGE is a name as listed (options, cli/scope, outputs/pprof), a command name
    (scope), or a file name found once (chrome_trace).

    \b
    Examples:
      tfprof-lite help
      tfprof-lite help options
      tfprof-lite help scope
    """
    if page is None:
        write_stdout(format_index())
        return
    path = find_page(page)
    write_stdout(read_input(path, "a documentation page").decode("utf-8", "replace"))


HELP_COMMANDS: dict[str, click.Command] = {"help": help_command}
