"""Per-step report lines of a checker grouped as step ranges.

Contract of :func:`group_step_lines` (one pass, linear in the number of lines):

* A per-step line is ``step N: ...``, ``step N left out: ...`` or
  ``slow step N: ...``. Per-step lines with the same text after the step number
  become one line, ``steps <ranges>: ...`` (``slow steps ...``), where the first
  of them was; ranges come from
  :func:`tfprof_lite.analysis.memory_summary.step_list`.
* When more than :data:`MAX_STEP_LINES` per-step lines remain, the first
  :data:`KEPT_STEP_LINES` are kept and one line says how many were left out,
  for which steps, and how to list them all.
* Other lines are kept as they are, in their order; TensorFlow's checkers write
  no per-step line, so their reports never change.
"""

from __future__ import annotations

import re

from tfprof_lite.analysis.memory_summary import step_list

__all__ = ["KEPT_STEP_LINES", "MAX_STEP_LINES", "group_step_lines"]

#: A checker keeps all its per-step lines up to this many (after grouping).
MAX_STEP_LINES = 20
#: How many per-step lines are kept when there are more.
KEPT_STEP_LINES = 10

_STEP_LINE = re.compile(r"(?P<pre>slow )?step (?P<n>\d+)(?P<tail>(?::| left out:) .*)", re.S)


def _grouped(lines: list[str]) -> list[tuple[str, list[int]]]:
    """Each output line with the steps it stands for (none: not a per-step line)."""
    out: list[tuple[str, list[int]]] = []
    where: dict[tuple[str, str], int] = {}
    for line in lines:
        match = _STEP_LINE.fullmatch(line)
        if match is None:
            out.append((line, []))
            continue
        key = (match["pre"] or "", match["tail"])
        at = where.get(key)
        if at is None:
            where[key] = len(out)
            out.append((line, [int(match["n"])]))
        else:
            out[at][1].append(int(match["n"]))
    return out


def _text(line: str, steps: list[int]) -> str:
    if len(steps) < 2:
        return line
    match = _STEP_LINE.fullmatch(line)
    assert match is not None  # only per-step lines have steps
    return f"{match['pre'] or ''}steps {step_list(steps)}{match['tail']}"


def group_step_lines(lines: list[str]) -> list[str]:
    """``lines`` with identical per-step findings grouped (see the module docstring)."""
    grouped = _grouped(lines)
    per_step = [i for i, (_, steps) in enumerate(grouped) if steps]
    if len(per_step) <= MAX_STEP_LINES:
        return [_text(line, steps) for line, steps in grouped]
    dropped = set(per_step[KEPT_STEP_LINES:])
    left = sorted(s for i in dropped for s in grouped[i][1])
    note = (
        f"{len(dropped)} more per-step lines left out (steps {step_list(left)}; "
        "tfprof-lite advise --per-step lists every step)"
    )
    out: list[str] = []
    for i, (line, steps) in enumerate(grouped):
        if i not in dropped:
            out.append(_text(line, steps))
        elif i == per_step[KEPT_STEP_LINES]:
            out.append(note)
    return out
