"""The runnable examples of the docs pages: parsing, normalising, checking, rewriting.

An example is a fenced block whose info string starts with ``console``::

    ```console
    $ tfprof-lite advise tfprof_out/profile_4
    <what the command prints, stdout and stderr as a terminal shows them>
    $ tfprof-lite code tfprof_out/profile_4 -max_depth 2 | head -3
    ...
    ```

Every line starting with ``$ `` is a shell command (a trailing ``\\`` continues it
on the next line); the lines up to the next command or the end of the block are
its output. Words after ``console`` are options of the block:

* ``ignore-order``: the output lines are compared as a multiset (for outputs
  sorted by a measured time, whose order changes from run to run); rank numbers
  (``top 2``) are normalised too. With a ``...`` line in such a block, every
  other shown line must be among the real lines.
* ``needs=PROGRAM``: the block runs only when ``PROGRAM`` is on ``PATH``
  (``pprof``, ``dot``); otherwise it is skipped, not failed.

A shown line that is exactly ``...`` stands for any number of lines (none
included), for parts of an output that vary from run to run as a whole, such as
the rows a diff of two timed steps lists.

Before comparing, both the shown and the real output are normalised by
:func:`normalise`: measured times (``1.23ms``, ``279us``, ``0.2sec``), percentages,
FLOP rates, run ids (``20261122T110036-30589-0``), hexadecimal addresses, the
size in ``Wrote FILE (288.1 KB)``, the number of memory ``timeline points`` (how
many allocation times coincide), and the numbers of JSON keys that hold times or
time shares become placeholders, and the padding around a placeholder becomes
one space (columns are as wide as the times in them). Nothing else is
normalised: names, counts, bytes, FLOPs, line numbers and the layout must match
exactly. Blocks fenced any other way (``sh``, ``text``) are not run.

:func:`regenerate_page` rewrites the shown output of every example that no longer
matches with the real output (a matching example is left as it is, so that a
regeneration does not churn every measured time).

This module is pure (no TensorFlow, no subprocess); the runner that executes the
commands lives in ``tests/integration/test_docs_examples.py``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "Block",
    "Example",
    "check_page",
    "normalise",
    "parse_page",
    "regenerate_page",
]

#: Runs one shell command and returns what it printed (stdout and stderr merged).
Runner = Callable[[str], str]

_FENCE = "```"
_PROMPT = "$ "

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b\d{8}T\d{6}-\d+-\d+\b"), "<run-id>"),
    (re.compile(r"\b0x[0-9a-fA-F]{4,}\b"), "<addr>"),
    (re.compile(r"(Wrote \S+ \()\d+(?:\.\d+)? [KMG]?B\)"), r"\1<file-size>)"),
    (re.compile(r"\b\d+ timeline points\b"), "<n> timeline points"),
    (re.compile(r"\d+(?:\.\d+)?[kmbt]?flop/s\b"), "<flop-rate>"),
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:us|ms|sec|s)\b"), "<time>"),
    (re.compile(r"(?<![\w.])\d+(?:\.\d+)?%"), "<pct>"),
    (
        re.compile(
            r'("[a-z_]*(?:_ms|ms_|micros|seconds|_time|util|idle|in_run|host_cpu|wait|share)'
            r'[a-z_]*"\s*:\s*)-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?'
        ),
        r"\1<measured>",
    ),
)
_RANK = re.compile(r"\btop \d+\b")
_PADDED = re.compile(r" *(<[a-z-]+>) *")
_ELLIPSIS = "..."


@dataclass
class Example:
    """One command of a block and the output the page shows for it."""

    command: str
    shown: list[str] = field(default_factory=list)
    #: The command as written on the page (``$ `` lines, continuations included).
    source: list[str] = field(default_factory=list)


@dataclass
class Block:
    """One ``console`` block: where it is on the page, its options and its examples."""

    start: int  # index of the opening fence line
    end: int  # index of the closing fence line
    options: frozenset[str]
    examples: list[Example]

    @property
    def needs(self) -> list[str]:
        """The programs the block needs on ``PATH`` (``needs=pprof``)."""
        return [o.split("=", 1)[1] for o in self.options if o.startswith("needs=")]


def _parse_block(lines: list[str], start: int, end: int, options: frozenset[str]) -> Block:
    examples: list[Example] = []
    i = start + 1
    while i < end:
        line = lines[i]
        if line.startswith(_PROMPT):
            source = [line]
            while source[-1].endswith("\\") and i + 1 < end:
                i += 1
                source.append(lines[i])
            parts = [source[0][len(_PROMPT) :], *source[1:]]
            command = " ".join(p.rstrip().rstrip("\\").strip() for p in parts)
            examples.append(Example(command.strip(), [], source))
        elif not examples:
            raise ValueError(f"line {i + 1}: output before the first '$ ' command")
        else:
            examples[-1].shown.append(line)
        i += 1
    return Block(start, end, options, examples)


def parse_page(text: str) -> list[Block]:
    """The ``console`` blocks of a page, in order.

    Raises:
        ValueError: a block is not closed, or has output before its first command.
    """
    lines = text.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith(_FENCE):
            info = stripped[len(_FENCE) :].split()
            close = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == _FENCE), None)
            if close is None:
                raise ValueError(f"line {i + 1}: fenced block is not closed")
            if info and info[0] == "console":
                blocks.append(_parse_block(lines, i, close, frozenset(info[1:])))
            i = close
        i += 1
    return blocks


def normalise(output: str | list[str], *, ignore_order: bool = False) -> list[str]:
    """The lines of ``output`` with what varies between runs replaced (module docstring)."""
    lines = output.split("\n") if isinstance(output, str) else list(output)
    while lines and not lines[-1].strip():
        lines.pop()
    result = []
    for line in lines:
        line = line.rstrip()
        for pattern, placeholder in _RULES:
            line = pattern.sub(placeholder, line)
        line = _PADDED.sub(r" \1 ", line).rstrip()
        if ignore_order:
            line = _RANK.sub("top <n>", line)
        result.append(line)
    return sorted(result) if ignore_order else result


def _matches(shown: list[str], got: list[str], ignore_order: bool) -> bool:
    """Whether ``got`` matches ``shown``, where a ``...`` line matches any lines
    (in an ``ignore-order`` block: the shown lines are among the real ones)."""
    if ignore_order and _ELLIPSIS in shown:
        missing = Counter(line for line in shown if line.strip() != _ELLIPSIS)
        missing.subtract(Counter(got))
        return all(n <= 0 for n in missing.values())
    if _ELLIPSIS not in shown:
        return shown == got
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line.strip() == _ELLIPSIS else re.escape(line) + r"\n"
        for line in shown
    )
    return re.fullmatch(pattern, "".join(f"{line}\n" for line in got)) is not None


def _differs(example: Example, real: str, ignore_order: bool) -> str | None:
    """A short description of how ``real`` differs from what the page shows, or None."""
    shown = normalise(example.shown, ignore_order=ignore_order)
    got = normalise(real, ignore_order=ignore_order)
    if _matches(shown, got, ignore_order):
        return None
    for n, (a, b) in enumerate(zip(shown, got)):
        if a != b:
            return f"line {n + 1}: page shows {a!r}, real output {b!r}"
    return f"page shows {len(shown)} lines, the real output has {len(got)}"


def check_page(
    text: str, run: Runner, *, skip: Callable[[Block], bool] = lambda b: False
) -> list[str]:
    """Runs every example of ``text`` and returns one message per example whose
    normalised output differs from the page's (empty: the page is true)."""
    problems = []
    for block in parse_page(text):
        if skip(block):
            continue
        for example in block.examples:
            why = _differs(example, run(example.command), "ignore-order" in block.options)
            if why is not None:
                problems.append(f"`$ {example.command}` (block at line {block.start + 1}): {why}")
    return problems


def regenerate_page(
    text: str, run: Runner, *, skip: Callable[[Block], bool] = lambda b: False
) -> str:
    """``text`` with the shown output of every example replaced by its real output."""
    lines = text.split("\n")
    out: list[str] = []
    copied = 0
    for block in parse_page(text):
        out.extend(lines[copied : block.start + 1])
        if skip(block):
            out.extend(lines[block.start + 1 : block.end])
        else:
            ignore_order = "ignore-order" in block.options
            for example in block.examples:
                real = run(example.command).rstrip("\n")
                out.extend(example.source)
                if _differs(example, real, ignore_order) is None:
                    out.extend(example.shown)
                elif real:
                    out.extend(line.rstrip() for line in real.split("\n"))
        copied = block.end
    out.extend(lines[copied:])
    return "\n".join(out)
