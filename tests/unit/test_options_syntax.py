"""Unit tests of ``tfprof_lite.options`` syntax (pure Python, no TensorFlow): the
``-output`` value (``parse_output``, ``OutputSpec``), ``full_match_any``, the
command-line option syntax (``tfprof_lite.options.cli_syntax``) and the round-trip
properties of ``Options.from_dict`` / ``to_dict`` and the builder.

The expected values and messages were taken from TF 2.21 (see ``test_options.py``).
"""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.options_messages import UNKNOWN_TYPE, VISUALIZE, _raises
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.options import (
    OPTION_NAMES,
    ORDER_BY_NAMES,
    SELECT_NAMES,
    Options,
    OutputSpec,
    ProfileOptionBuilder,
    full_match_any,
    parse_output,
)
from tfprof_lite.options.cli_syntax import (
    apply_cli_options,
    parse_bool,
    parse_cli_options,
    parse_command_line,
)

# ------------------------------------------------------------------ parse_output


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", OutputSpec("stdout", ())),
        ("stdout", OutputSpec("stdout", ())),
        ("stdout:", OutputSpec("stdout", ())),
        ("none", OutputSpec("none", ())),
        ("none:,,", OutputSpec("none", ())),
        ("file:outfile=r.txt", OutputSpec("file", (("outfile", "r.txt"),))),
        ("timeline:outfile=/t/x.json", OutputSpec("timeline", (("outfile", "/t/x.json"),))),
        ("pprof:outfile=p.pb.gz", OutputSpec("pprof", (("outfile", "p.pb.gz"),))),
        ("file:outfile=a=b", OutputSpec("file", (("outfile", "a=b"),))),
        ("file:outfile==a", OutputSpec("file", (("outfile", "a"),))),
        ("file:outfile=a==b=", OutputSpec("file", (("outfile", "a=b"),))),
        ("file:=outfile=a", OutputSpec("file", (("outfile", "a"),))),
        ("file:,,outfile=d,,", OutputSpec("file", (("outfile", "d"),))),
        ("file:outfile=e,outfile=f", OutputSpec("file", (("outfile", "f"),))),
        ("file:outfile=k:l", OutputSpec("file", (("outfile", "k:l"),))),
    ],
)
def test_parse_output_valid(text: str, expected: OutputSpec) -> None:
    assert parse_output(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("foo", UNKNOWN_TYPE.format("foo")),
        ("foo:outfile=x", UNKNOWN_TYPE.format("foo")),
        ("STDOUT", UNKNOWN_TYPE.format("STDOUT")),
        (":outfile=x", UNKNOWN_TYPE.format("")),
        (
            "timeline",
            "Missing required output_options for timeline\nE.g. -output timeline:outfile=...",
        ),
        ("pprof:", "Missing required output_options for pprof\nE.g. -output pprof:outfile=..."),
        ("file:,", "Missing required output_options for file\nE.g. -output file:outfile=..."),
        ("timeline:foo", VISUALIZE),
        ("timeline:outfile", VISUALIZE),
        ("timeline:outfile=", VISUALIZE),
        ("file:=x", VISUALIZE),
        ("none:a", VISUALIZE),
        ("timeline:a=b", "Unrecognized options a for output_type: timeline"),
        ("stdout:outfile=x", "Unrecognized options outfile for output_type: stdout"),
        ("file:a=b,c", "Unrecognized options a for output_type: file"),
        ("file:c,a=b", VISUALIZE),
    ],
)
def test_parse_output_errors(text: str, message: str) -> None:
    with _raises(message):
        parse_output(text)


def test_output_spec_helpers() -> None:
    spec = parse_output("timeline:outfile=t.json")
    assert spec.outfile == "t.json"
    assert spec.to_option_string() == "timeline:outfile=t.json"
    assert spec.block_text() == "timeline:outfile=t.json"
    assert OutputSpec().outfile is None
    assert OutputSpec().to_option_string() == "stdout" and OutputSpec().block_text() == "stdout:"
    assert spec.is_representable()
    assert not OutputSpec("file", (("outfile", "a,b"),)).is_representable()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("bogus", ()), UNKNOWN_TYPE.format("bogus")),
        (("file", ()), "Missing required output_options for file\nE.g. -output file:outfile=..."),
        (("none", (("outfile", "x"),)), "Unrecognized options outfile for output_type: none"),
        (
            ("file", (("outfile",),)),
            "OutputSpec options must be (key, value) strings, got ('outfile',)",
        ),
    ],
)
def test_output_spec_validates(args: tuple[Any, Any], message: str) -> None:
    with _raises(message):
        OutputSpec(*args)


# ------------------------------------------------------------------ regex helper


def test_full_match_any() -> None:
    assert full_match_any([".*"], "")
    assert full_match_any(["a", "s1/.*"], "s1/w")
    assert not full_match_any(["s1"], "s1/w")  # full match, not search
    assert not full_match_any([], "x")
    assert full_match_any(["MatMul|Conv2D"], "Conv2D")


# ------------------------------------------------------------------ CLI syntax


def test_cli_example_from_the_spec() -> None:
    line = (
        "-max_depth 4 -select micros,bytes -order_by micros"
        " -account_displayed_op_only -output file:outfile=x"
    )
    assert parse_cli_options(line) == {
        "max_depth": 4,
        "select": ["bytes", "micros"],
        "order_by": "micros",
        "account_displayed_op_only": True,
        "output": "file:outfile=x",
    }


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ("", {}),
        ("  -step   -1  ", {"step": -1}),
        ("-min_bytes +12", {"min_bytes": 12}),
        ("-max_depth 2147483647", {"max_depth": 2**31 - 1}),
        ("-min_micros 9223372036854775807", {"min_micros": 2**63 - 1}),
        (["-min_params", " 7\t"], {"min_params": 7}),
        ("--max_depth=4", {"max_depth": 4}),
        ("--max-depth 4", {"max_depth": 4}),
        ("-max-depth=4 -max_depth 5", {"max_depth": 5}),
        ("--output=file:outfile=a=b", {"output": "file:outfile=a=b"}),
        ("-show_name_regexes 'a.*,b'", {"show_name_regexes": ["a.*", "b"]}),
        ("-hide_name_regexes \"'x,,y'\"", {"hide_name_regexes": ["x", "y"]}),
        ("-trim_name_regexes ''", {"trim_name_regexes": []}),
        ("-account_type_regexes .*", {"account_type_regexes": [".*"]}),
        ("-start_name_regexes a'b", {"start_name_regexes": ["a'b"]}),
        ("-select 'params,params,bytes'", {"select": ["bytes", "params"]}),
        ("-select ,", {"select": []}),
        ("-order_by occurrence", {"order_by": "occurrence"}),
        ("-account_displayed_op_only", {"account_displayed_op_only": True}),
        ("-account_displayed_op_only FALSE", {"account_displayed_op_only": False}),
        ("-account_displayed_op_only y -step 1", {"account_displayed_op_only": True, "step": 1}),
        ("-account_displayed_op_only -step 1", {"account_displayed_op_only": True, "step": 1}),
        ("--account-displayed-op-only=No", {"account_displayed_op_only": False}),
        (["-output", ""], {"output": ""}),
        (["-output", "file:outfile=my report.txt"], {"output": "file:outfile=my report.txt"}),
    ],
)
def test_cli_options_valid(args: Any, expected: dict[str, Any]) -> None:
    assert parse_cli_options(args) == expected


@pytest.mark.parametrize("word", ["true", "T", "yes", "Y", "1", "false", "f", "NO", "n", "0"])
def test_parse_bool_words(word: str) -> None:
    assert parse_bool(word) is (word.lower() in ("true", "t", "yes", "y", "1"))


def test_parse_bool_rejects_other_words() -> None:
    assert parse_bool("maybe") is None and parse_bool("") is None and parse_bool("2") is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("-max_depth x", "Invalid option '-max_depth' value: 'x'"),
        ("-max_depth", "Invalid option '-max_depth' value: ''"),
        ("-max_depth 2147483648", "Invalid option '-max_depth' value: '2147483648'"),
        (
            "-min_bytes 9223372036854775808",
            "Invalid option '-min_bytes' value: '9223372036854775808'",
        ),
        ("-step 1.5", "Invalid option '-step' value: '1.5'"),
        ("-step 0x10", "Invalid option '-step' value: '0x10'"),
        ("-step 1_000", "Invalid option '-step' value: '1_000'"),
        ("-step ٣", "Invalid option '-step' value: '٣'"),
        ("-min_micros -output", "Invalid option '-min_micros' value: '-output'"),
        ("-order_by bogus", "Invalid option '-order_by' value: 'bogus'"),
        ("-order_by 'micros'", "Invalid option '-order_by' value: ''micros''"),
        ("-select micros,foo", "Invalid option '-select' value: 'micros,foo'"),
        ("-select", "Invalid option '-select' value: ''"),
        ("-show_name_regexes", "Invalid option '-show_name_regexes' value: ''"),
        (
            "-account_displayed_op_only maybe",
            "Invalid option '-account_displayed_op_only' value: 'maybe'",
        ),
        ("--account_displayed_op_only=", "Invalid option '--account_displayed_op_only' value: ''"),
        ("-bogus 3", "Invalid option '-bogus' value: '3'"),
        ("--bogus=3", "Invalid option '--bogus' value: '3'"),
        ("foo bar", "Invalid option 'foo' value: 'bar'"),
        ("-max_depth 1 extra", "Invalid option 'extra' value: ''"),
        ("---max_depth 1", "Invalid option '---max_depth' value: '1'"),
        ("-dump_to_file x", "Invalid option '-dump_to_file' value: 'x'"),
        ("--max_depth=", "Invalid option '--max_depth' value: ''"),
        ("-output foo", UNKNOWN_TYPE.format("foo")),
        (
            "-output timeline",
            "Missing required output_options for timeline\nE.g. -output timeline:outfile=...",
        ),
    ],
)
def test_cli_options_errors(args: str, message: str) -> None:
    with _raises(message):
        parse_cli_options(args)


def test_parse_command_line() -> None:
    assert parse_command_line("scope -max_depth 3") == ("scope", {"max_depth": 3})
    assert parse_command_line("  set  ") == ("set", {})
    for line in ["", "   ", "bogus -max_depth 3", "-max_depth 3"]:
        with _raises("First string must be a valid command."):
            parse_command_line(line)


def test_apply_cli_options() -> None:
    base = Options.from_dict(ProfileOptionBuilder().build())
    new = apply_cli_options(base, "-max_depth 3 -select params -output none")
    assert (new.max_depth, new.select, new.output.type) == (3, ("params",), "none")
    assert new.account_type_regexes == (".*",)
    with pytest.raises(InvalidOptionError, match="invalid regular expression"):
        apply_cli_options(base, "-show_name_regexes (").validate_strict()


# ------------------------------------------------------------------ round trip property

_PATTERNS = st.one_of(
    st.sampled_from([".*", "a", "s1/.*", ".*gpu:0.*", "MatMul|Conv2D", "_trainable_variables"]),
    st.text(max_size=8).map(re.escape),
)
_NAMES = st.one_of(st.sampled_from(SELECT_NAMES), st.text(max_size=6))
_OUTFILE = st.text(min_size=1, max_size=12).filter(lambda s: "," not in s and "=" not in s)
_OUTPUTS = st.one_of(
    st.sampled_from(["", "stdout", "none", "stdout:", "none:"]),
    st.builds("{}:outfile={}".format, st.sampled_from(["file", "timeline", "pprof"]), _OUTFILE),
)
_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_VALUES: dict[str, st.SearchStrategy[Any]] = {
    **{name: _INT64 for name in OPTION_NAMES[:12]},
    "order_by": st.one_of(st.sampled_from(ORDER_BY_NAMES), st.text(max_size=8)),
    **{name: st.lists(_PATTERNS, max_size=3) for name in OPTION_NAMES[13:18]},
    "account_displayed_op_only": st.booleans(),
    "select": st.lists(_NAMES, max_size=5),
    "output": _OUTPUTS,
    "dump_to_file": st.one_of(st.just(""), st.text(max_size=10)),
}
_DICTS = st.fixed_dictionaries({}, optional=_VALUES)


@settings(max_examples=300, deadline=None)
@given(_DICTS)
def test_to_dict_is_a_fixed_point(d: dict[str, Any]) -> None:
    with contextlib.redirect_stderr(io.StringIO()):
        once = Options.from_dict(d)
        d1 = once.to_dict()
        twice = Options.from_dict(d1)
    assert twice == once
    assert twice.to_dict() == d1
    assert set(d1) - {"dump_to_file"} == set(OPTION_NAMES)


@settings(max_examples=200, deadline=None)
@given(_DICTS)
def test_builder_round_trip_through_options(d: dict[str, Any]) -> None:
    d = {k: v for k, v in d.items() if k != "dump_to_file"}
    built = ProfileOptionBuilder(d).build()
    assert built == d and built is not d
    assert Options.from_dict(built) == Options.from_dict(d)
