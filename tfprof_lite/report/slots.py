"""The report's pluggable sections (slots): the memory timeline and the advisor.

Contract: :data:`SLOTS` maps a slot name to its title and provider; a provider
returns an HTML fragment or None ("not available"). :func:`slot_section` wraps a
provider's fragment in its section, turning a failing provider into a one-line
note so that a broken slot never breaks the report.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

from tfprof_lite import advisor
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.report.markup import Section, esc
from tfprof_lite.report.memory import memory_fragment

__all__ = ["SLOTS", "advisor_section", "memory_timeline_section", "slot_section"]


def memory_timeline_section(model: ProfileModel) -> str | None:
    """SLOT for the memory timeline: bytes in use over time per allocator for the
    step with the highest peak, and what is live at the peak.

    Returns the fragment of :func:`tfprof_lite.report.memory.memory_fragment`
    (inline SVG and tables, all profile text escaped, no external resources), or
    None when the profile has no steps.
    """
    return memory_fragment(model)


class _LogCollector(logging.Handler):
    """Collects the ``tfprof_lite`` logger's messages instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Keeps the formatted message."""
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _collect_logs() -> Iterator[_LogCollector]:
    logger = logging.getLogger("tfprof_lite")
    collector = _LogCollector()
    propagate = logger.propagate
    logger.addHandler(collector)
    logger.propagate = False
    try:
        yield collector
    finally:
        logger.removeHandler(collector)
        logger.propagate = propagate


def advisor_section(model: ProfileModel) -> str | None:
    """SLOT for the advisor's findings: every registered checker (:data:`advisor.CHECKERS`).

    Runs :func:`tfprof_lite.advisor.run_checkers` (which prints nothing; its log
    messages are captured and listed as notes) and renders each
    checker's reports. Any failure of the advisor becomes a one-line note in the
    report instead of an error.
    """
    try:
        with _collect_logs() as logs:
            advice = advisor.run_checkers(model, {name: {} for name in advisor.CHECKERS})
    except Exception as err:  # noqa: BLE001 - the report must not fail with the advisor
        reason = " ".join(str(err).split()) or type(err).__name__
        return f'<p class="muted">The advisor could not run on this profile: {esc(reason)}</p>'
    notes = "".join(f"<li>{esc(m)}</li>" for m in dict.fromkeys(logs.messages))
    parts = [f'<p class="muted">Advisor notes:</p><ul class="muted">{notes}</ul>'] if notes else []
    for name in sorted(advice):
        reports = advice[name]
        items = "".join(f"<li>{esc(r)}</li>" for r in reports) or "<li>no findings</li>"
        parts.append(f'<h3>{esc(name)}</h3><ul class="advice">{items}</ul>')
    return "".join(parts) or None


#: The report's pluggable sections: slot name -> (title, provider). A provider
#: returns an HTML fragment or None ("not available").
SLOTS: dict[str, tuple[str, Callable[[ProfileModel], str | None]]] = {
    "memory": ("Memory timeline", memory_timeline_section),
    "advisor": ("Advisor findings", advisor_section),
}


def slot_section(key: str, model: ProfileModel) -> Section:
    """The section of slot ``key``: its provider's fragment, or a note saying why not."""
    title, provider = SLOTS[key]
    try:
        fragment = provider(model)
    except Exception as err:  # noqa: BLE001 - a broken slot must not break the report
        fragment = f'<p class="muted">This section failed: {esc(" ".join(str(err).split()))}</p>'
    if fragment is None:
        fragment = '<p class="muted">Not available for this profile in this version.</p>'
    return Section(key, title, f'<div class="slot" data-slot="{esc(key)}">{fragment}</div>')
