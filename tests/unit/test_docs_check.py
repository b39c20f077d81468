"""The checker of the docs' console examples (tests/docs_examples.py), on real and
doctored pages, with a stand-in runner that returns known outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs_examples import check_page, normalise, parse_page, regenerate_page

REPO = Path(__file__).resolve().parents[2]

PAGE = """# A page

```console
$ tfprof-lite advise p
top 1 operation type: Relu, cpu: 279us (35.86%)
$ tfprof-lite hlo d | head -1 \\
      --ignored
module  cluster
```

```sh
$ not run
```
"""

OUTPUTS = {
    "tfprof-lite advise p": "top 1 operation type: Relu, cpu: 1.04ms (63.19%)\n",
    "tfprof-lite hlo d | head -1 --ignored": "module  cluster\n",
}


def _runner(outputs: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda command: outputs[command]


def test_parse_page_commands_outputs_continuations() -> None:
    (block,) = parse_page(PAGE)
    assert [e.command for e in block.examples] == list(OUTPUTS)
    assert block.examples[1].shown == ["module  cluster"]
    assert block.examples[1].source[1].strip() == "--ignored"


def test_times_and_percentages_are_normalised_names_are_not() -> None:
    assert check_page(PAGE, _runner(OUTPUTS)) == []
    doctored = dict(OUTPUTS)
    doctored["tfprof-lite advise p"] = "top 1 operation type: MatMul, cpu: 279us (35.86%)\n"
    (problem,) = check_page(PAGE, _runner(doctored))
    assert "MatMul" in problem and "advise p" in problem


def test_missing_and_extra_lines_fail() -> None:
    extra = dict(OUTPUTS, **{"tfprof-lite hlo d | head -1 --ignored": "module  cluster\nx\n"})
    assert len(check_page(PAGE, _runner(extra))) == 1


def test_ignore_order_and_ellipsis() -> None:
    page = "```console ignore-order\n$ c\ntop 1 a: 1us\ntop 2 b: 2us\n```\n"
    assert check_page(page, _runner({"c": "top 1 b: 9ms\ntop 2 a: 1us\n"})) == []
    assert check_page(page, _runner({"c": "top 1 b: 9ms\ntop 2 c: 1us\n"})) != []
    subset = "```console ignore-order\n$ c\nb\n...\n```\n"
    assert check_page(subset, _runner({"c": "a\nb\n"})) == []
    assert check_page(subset, _runner({"c": "a\nc\n"})) != []
    framed = "```console\n$ c\nhead\n...\ntail\n```\n"
    assert check_page(framed, _runner({"c": "head\nx\ny\ntail\n"})) == []
    assert check_page(framed, _runner({"c": "head\ntail\n"})) == []
    assert check_page(framed, _runner({"c": "head\nx\n"})) != []


def test_regenerate_rewrites_only_what_drifted() -> None:
    drifted = dict(OUTPUTS, **{"tfprof-lite hlo d | head -1 --ignored": "module  id\n"})
    new = regenerate_page(PAGE, _runner(drifted))
    assert "module  id" in new and "module  cluster" not in new
    assert "cpu: 279us (35.86%)" in new  # matched after normalising: left as it was
    assert "$ not run" in new and new.endswith("```\n")
    assert check_page(new, _runner(drifted)) == []


def test_normalise_keeps_counts_and_bytes() -> None:
    assert normalise("peak 475.73KB at +867us; 19 allocations") == [
        "peak 475.73KB at + <time> ; 19 allocations"
    ]
    assert normalise('  "mean_ms": 0.77,\n  "steps": 200,') == [
        '  "mean_ms": <measured> ,',
        '  "steps": 200,',
    ]


def test_a_doctored_real_page_fails() -> None:
    """docs/cli/code.md with a stale line number, checked against the page's own
    (true) outputs: the checker reports the drift."""
    text = (REPO / "docs" / "cli" / "code.md").read_text(encoding="utf-8")
    (block,) = parse_page(text)
    outputs = {e.command: "\n".join(e.shown) + "\n" for e in block.examples}
    assert check_page(text, _runner(outputs)) == []
    line = next(ln for ln in block.examples[0].shown if "quickstart.py:" in ln)
    doctored = text.replace(line, line.replace("quickstart.py:", "quickstart.py:8", 1))
    problems = check_page(doctored, _runner(outputs))
    assert len(problems) == 1 and "quickstart.py:8" in problems[0]


def test_unclosed_block_is_an_error() -> None:
    with pytest.raises(ValueError, match="not closed"):
        parse_page("```console\n$ c\n")
