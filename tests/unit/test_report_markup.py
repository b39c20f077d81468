"""The report's HTML escaping equals the standard library's, on every kind of text."""

from __future__ import annotations

import html
import random

from tfprof_lite.report.markup import esc


def test_esc_equals_html_escape() -> None:
    samples: list[object] = ["", "plain", "1.23ms", 42, 1.5, None, "a&b", "<x>", 'q"', "it's"]
    samples.append("&<>\"'&amp;")
    rng = random.Random(3)
    alphabet = "ab&<>\"' /:é\u2028"
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(12))) for _ in range(500)]
    for text in samples:
        assert esc(text) == html.escape(str(text), quote=True), text
