"""The five regex options run on RE2, as tfprof's ``RE2::FullMatch`` does.

* Patterns that make a backtracking engine explode (``((.*)*)*!``, ``(.*)*X``)
  finish at once on a profile of 2,700 nodes with names as long as a training
  graph's (a hang would time the suite out; there is no timing assertion) and
  give the same answer as a pattern that matches nothing, which they are.
* A pattern RE2 rejects (back-reference, look-ahead, unbalanced parenthesis,
  too large a repetition) matches nothing, with one warning naming it; the CLI's
  strict validation refuses it.
* RE2's syntax and semantics, not Python's: ``.`` stops at a newline, classes
  such as ``\\d`` are ASCII, matching is on code points of UTF-8 names.
* Against TensorFlow: the same patterns on unicode and ordinary names give TF's
  reports and returned messages in the scope, graph and op views.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

import tfprof_lite
from tests.hand_cases import chain_case, names_case
from tests.handmade import CPU, HandCase, node, ns, run_meta
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.options.options import Options
from tfprof_lite.options.regex import full_match_any, full_match_many, regex_error

REGEX_OPTIONS = (
    "account_type_regexes",
    "start_name_regexes",
    "trim_name_regexes",
    "show_name_regexes",
    "hide_name_regexes",
)
PATHOLOGICAL = ("((.*)*)*!", "(.*)*X", "(a*)*b", "((n|n0)*)*!")
INVALID = ("(a)\\1", "(?=x)", "(?<!a)b", "(", "a{1001}", "[z-a]")
METHODS = {"scope": "profile_name_scope", "graph": "profile_graph", "op": "profile_operations"}


def _profiler(case: HandCase) -> tfprof_lite.Profiler:
    prof = tfprof_lite.Profiler(case.graph_def, op_log=case.op_log or None)
    for step, data in case.run_metas:
        prof.add_step(step, data)
    return prof


def _options(**changes: Any) -> dict[str, Any]:
    opts: dict[str, Any] = dict(tfprof_lite.ProfileOptionBuilder.time_and_memory())
    opts.update(max_depth=10000, min_bytes=0, min_micros=0, output="none", select=["micros"])
    opts.update(changes)
    return opts


def _answer(prof: tfprof_lite.Profiler, view: str, opts: dict[str, Any]) -> bytes:
    message = getattr(prof, METHODS[view])(opts)
    data: bytes = message.SerializeToString(deterministic=True)
    return data


def realistic_case() -> HandCase:
    """200 nodes named like a training graph's (30-70 characters: a backtracking
    engine needs minutes for ``((.*)*)*!`` on one of them), plus the 2,500-node
    input chain of `chain_case`."""
    nodes = list(graph_def_nodes(chain_case()))
    recs = []
    for i in range(40):
        scope = f"training/Adam/gradients/model_{i % 4}/dense_{i}/MatMul_grad"
        prev = None
        for op in ("MatMul", "MatMul_1", "BiasAddGrad", "Tile", "Reshape"):
            name = f"{scope}/{op}"
            nodes.append(node(name, op.split("_")[0], [prev] if prev else [], outputs=[[8, 8]]))
            recs.append(ns(name, 100 + len(recs), 3))
            prev = name
    steps = [(0, run_meta([(CPU, recs)]))]
    return HandCase.make("realistic", nodes, steps)


def graph_def_nodes(case: HandCase) -> list[Any]:
    """The NodeDefs of a case's GraphDef."""
    from tfprof_lite.proto import messages as pb

    return list(pb.GraphDef.FromString(case.graph_def).node)


@pytest.fixture(scope="module")
def chain() -> tfprof_lite.Profiler:
    prof = _profiler(realistic_case())
    prof.add_step(1, chain_case().run_metas[0][1])
    return prof


@pytest.mark.parametrize("option", REGEX_OPTIONS)
@pytest.mark.parametrize("pattern", PATHOLOGICAL)
def test_pathological_patterns_finish_and_match_nothing(
    chain: tfprof_lite.Profiler, option: str, pattern: str
) -> None:
    for view in METHODS:
        expected = _answer(chain, view, _options(**{option: ["no_such_name"]}))
        assert _answer(chain, view, _options(**{option: [pattern]})) == expected


def test_pathological_pattern_against_long_names() -> None:
    names = ["n" * 5000, "a" * 3000 + "c", "x/" * 2000]
    assert full_match_many(["((.*)*)*!", "(a*)*b", "(x/|x)*y"], names) == [False] * 3
    assert full_match_many(["(n*)*", "(a*)*c", "(x/)*"], names) == [True] * 3


@pytest.mark.parametrize("pattern", INVALID)
def test_invalid_pattern_matches_nothing_with_one_warning(
    pattern: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert regex_error(pattern)
    opts = Options.from_dict({"show_name_regexes": [pattern, "b"]})  # accepted, as TF does
    assert opts.show_name_regexes == (pattern, "b")
    with caplog.at_level(logging.WARNING, logger="tfprof_lite"):
        assert not full_match_any([pattern], "a")
        assert full_match_any([pattern, "b"], "b")  # the other patterns still count
        assert full_match_many([pattern], ["a", "b"]) == [False, False]
    warned = [r.getMessage() for r in caplog.records if repr(pattern) in r.getMessage()]
    assert len(warned) <= 1  # once per process: an earlier test may have used it
    with pytest.raises(InvalidOptionError, match="invalid regular expression"):
        opts.validate_strict()


def test_invalid_pattern_warning_names_the_pattern(caplog: pytest.LogCaptureFixture) -> None:
    pattern = "(?=only_once_here)"
    with caplog.at_level(logging.WARNING, logger="tfprof_lite"):
        for name in ("a", "b", "c"):
            assert not full_match_any([pattern], name)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1
    assert repr(pattern) in warned[0] and "matches nothing" in warned[0]


@pytest.mark.parametrize("option", REGEX_OPTIONS)
def test_invalid_pattern_in_views_is_no_match(chain: tfprof_lite.Profiler, option: str) -> None:
    for view in METHODS:
        expected = _answer(chain, view, _options(**{option: ["no_such_name"]}))
        assert _answer(chain, view, _options(**{option: ["(?=n)"]})) == expected


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("a.b", "a\nb", False),  # '.' stops at a newline
        ("(?s)a.b", "a\nb", True),
        (".", "é", True),  # code points, not bytes
        ("..", "é", False),
        ("\\C\\C", "é", True),  # \C: one byte
        ("\\d+", "٣٤", False),  # ASCII classes (Python's re would match)
        ("\\w+", "ñ", False),
        ("\\pL+", "ñü日本", True),
        ("[[:alpha:]]+", "abc", True),
        ("b/日本", "b/日本", True),
        ("b/.*", "b/Ünï", True),
        ("(?i)matmul", "MatMul", True),
        ("s1", "s1/w", False),  # full match only
    ],
)
def test_re2_semantics(pattern: str, text: str, matches: bool) -> None:
    assert full_match_any([pattern], text) is matches
    assert full_match_many([pattern], [text]) == [matches]


# ------------------------------------------------------------------ against TensorFlow

TF_PATTERNS = (
    *PATHOLOGICAL[:2],
    *INVALID[:4],
    ".*日本",
    "b/.",
    "\\C\\C.*",
    "\\w+",
    "[[:upper:]].*",
)


@pytest.mark.tf
@pytest.mark.parametrize("option", REGEX_OPTIONS)
@pytest.mark.parametrize("pattern", TF_PATTERNS)
def test_same_as_tensorflow(option: str, pattern: str) -> None:
    pytest.importorskip("tensorflow")
    from tests.integration import hand_oracle

    opts = _options(**{option: [pattern]}, select=["micros", "op_types"])
    for view in METHODS:
        hand_oracle.check(names_case(), view, opts)
