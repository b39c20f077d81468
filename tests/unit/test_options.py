"""Unit tests of ``tfprof_lite.options`` (pure Python, no TensorFlow): names, defaults,
normalization, ``from_dict`` errors, ``dump_to_file``, ``to_dict`` / ``updated``,
``validate_strict`` and the block text.

The expected values and messages were taken from TF 2.21; the differential checks
against TF itself live in ``tests/integration/test_options_tf.py``. The ``-output``
syntax, the command-line option syntax and the round-trip properties are in
``test_options_syntax.py``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.unit.options_messages import DUMP_NOTE, UNKNOWN_TYPE, _raises
from tfprof_lite.errors import InvalidOptionError, TfprofLiteError
from tfprof_lite.options import (
    OPTION_NAMES,
    ORDER_BY_NAMES,
    OUTPUT_TYPES,
    SELECT_NAMES,
    Options,
    OutputSpec,
    ProfileOptionBuilder,
)
from tfprof_lite.options.cli_syntax import (
    COMMANDS,
)

# ------------------------------------------------------------------ constants


def test_name_tables() -> None:
    assert len(OPTION_NAMES) == 21 and len(set(OPTION_NAMES)) == 21
    assert len(SELECT_NAMES) == 14 and len(set(SELECT_NAMES)) == 14
    assert len(ORDER_BY_NAMES) == 11
    assert OUTPUT_TYPES[:5] == ("timeline", "stdout", "file", "pprof", "none")
    assert OUTPUT_TYPES[5:] == ("json", "csv", "collapsed")
    assert COMMANDS == ("scope", "graph", "code", "op", "advise", "set", "help")
    assert [f.name for f in dataclasses.fields(Options)] == [*OPTION_NAMES, "user_code"]


def test_every_field_has_help() -> None:
    for f in dataclasses.fields(Options) + dataclasses.fields(OutputSpec):
        assert f.metadata["help"], f.name


def test_invalid_option_error_is_a_tfprof_lite_value_error() -> None:
    assert issubclass(InvalidOptionError, TfprofLiteError)
    assert issubclass(InvalidOptionError, ValueError)


# ------------------------------------------------------------------ defaults


def test_defaults_are_build_options_defaults() -> None:
    o = Options()
    assert o.max_depth == 10 and o.step == -1 and o.order_by == "name"
    mins = [n for n in OPTION_NAMES if n.startswith("min_")]
    assert len(mins) == 10 and all(getattr(o, n) == 0 for n in mins)
    regexes = [n for n in OPTION_NAMES if n.endswith("_regexes")]
    assert all(getattr(o, n) == () for n in regexes)  # empty: nothing accounted/shown
    assert o.account_displayed_op_only is False and o.select == ()
    assert o.output == OutputSpec("stdout", ())
    assert Options.from_dict({}) == o


def test_options_are_frozen_and_hashable() -> None:
    o = Options()
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.max_depth = 3  # type: ignore[misc]
    assert hash(o) == hash(Options.from_dict({}))


def test_from_dict_of_builder_default() -> None:
    o = Options.from_dict(ProfileOptionBuilder().build())
    assert o.max_depth == 100
    assert o.account_type_regexes == (".*",) and o.show_name_regexes == (".*",)
    assert o.start_name_regexes == (".*",) and o.trim_name_regexes == ()
    assert o.select == ("micros",) and o.min_peak_bytes == 0


@pytest.mark.parametrize(
    "preset", ["trainable_variables_parameter", "float_operation", "time_and_memory"]
)
def test_presets_are_valid_options(preset: str) -> None:
    d = getattr(ProfileOptionBuilder, preset)()
    o = Options.from_dict(d)
    assert o.max_depth == 10000 and o.account_displayed_op_only is True
    assert o.to_dict() == {**Options().to_dict(), **d, "select": sorted(d["select"])}


# ------------------------------------------------------------------ normalization


def test_select_is_sorted_and_deduplicated() -> None:
    o = Options.from_dict({"select": ["params", "bytes", "params", "micros"]})
    assert o.select == ("bytes", "micros", "params")
    assert Options(select=("b", "a", "b")).select == ("a", "b")
    assert Options.from_dict({"select": {"micros", "bytes"}}).select == ("bytes", "micros")


def test_lists_become_tuples() -> None:
    o = Options.from_dict({"hide_name_regexes": ["a", "b"], "trim_name_regexes": ("c",)})
    assert o.hide_name_regexes == ("a", "b") and o.trim_name_regexes == ("c",)


@pytest.mark.parametrize(
    ("given", "stored"),
    [(7, 7), (-1, -1), (2**31 - 1, 2**31 - 1), (2**31, -(2**31)), (2**32 + 1, 1)],
)
def test_max_depth_is_narrowed_like_cpp_int(given: int, stored: int) -> None:
    assert Options.from_dict({"max_depth": given}).max_depth == stored


def test_integral_and_bytes_values_are_accepted() -> None:
    class Index:
        def __index__(self) -> int:
            return 5

    o = Options.from_dict({"min_bytes": Index(), "order_by": b"micros", "select": [b"params"]})
    assert o.min_bytes == 5 and o.order_by == "micros" and o.select == ("params",)


@pytest.mark.parametrize(("given", "stored"), [(True, True), (0, False), (2, True)])
def test_bool_accepts_ints_like_protobuf(given: object, stored: bool) -> None:
    assert Options.from_dict({"account_displayed_op_only": given}).account_displayed_op_only is (
        stored
    )


def test_unknown_select_and_order_by_are_tolerated() -> None:
    o = Options.from_dict({"select": ["nope", "micros"], "order_by": "bogus"})
    assert o.select == ("micros", "nope") and o.order_by == "bogus"


def test_direct_construction_validates() -> None:
    with pytest.raises(InvalidOptionError, match="'step' expects an int"):
        Options(step="1")  # type: ignore[arg-type]
    assert Options(output="file:outfile=x").output.outfile == "x"  # type: ignore[arg-type]


# ------------------------------------------------------------------ from_dict errors


def test_unknown_key_suggests_close_match() -> None:
    with pytest.raises(InvalidOptionError) as info:
        Options.from_dict({"max_depht": 3})
    text = str(info.value)
    assert text.startswith("Unknown option 'max_depht'. Did you mean 'max_depth'?")
    assert "Valid options: max_depth, min_bytes," in text and "dump_to_file" in text


def test_unknown_key_without_close_match() -> None:
    with pytest.raises(InvalidOptionError, match=r"^Unknown option 'zzz'\. Valid options: "):
        Options.from_dict({"zzz": 1})


def test_non_mapping_is_rejected() -> None:
    with _raises("Options must be a dict, got list"):
        Options.from_dict([("max_depth", 1)])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("d", "message"),
    [
        (
            {"max_depth": "4"},
            "Option 'max_depth' expects an int, got str '4' (pass a number, not a string)",
        ),
        ({"min_bytes": 1.5}, "Option 'min_bytes' expects an int, got float 1.5"),
        ({"step": None}, "Option 'step' expects an int, got NoneType None"),
        ({"min_micros": True}, "Option 'min_micros' expects an int, got bool True"),
        ({"min_params": 2**63}, "Option 'min_params' value out of int64 range: " + str(2**63)),
        (
            {"min_float_ops": -(2**63) - 1},
            f"Option 'min_float_ops' value out of int64 range: {-(2**63) - 1}",
        ),
        ({"order_by": 3}, "Option 'order_by' expects a string, got int 3"),
        ({"order_by": b"\xff"}, "Option 'order_by' expects a UTF-8 string, got bytes b'\\xff'"),
        (
            {"account_displayed_op_only": "yes"},
            "Option 'account_displayed_op_only' expects a bool, got str 'yes'",
        ),
        (
            {"select": "micros"},
            "Option 'select' expects a list of strings, got str 'micros' "
            "(pass a list, e.g. ['micros'])",
        ),
        (
            {"show_name_regexes": ".*"},
            "Option 'show_name_regexes' expects a list of strings, got str '.*' "
            "(pass a list, e.g. ['.*'])",
        ),
        (
            {"hide_name_regexes": 3},
            "Option 'hide_name_regexes' expects a list of strings, got int 3",
        ),
        ({"select": {"a": 1}}, "Option 'select' expects a list of strings, got dict {'a': 1}"),
        ({"select": ["micros", 1]}, "Option 'select[1]' expects a string, got int 1"),
        ({"output": None}, "Option 'output' expects a string, got NoneType None"),
        ({"dump_to_file": 3}, "Option 'dump_to_file' expects a string, got int 3"),
    ],
)
def test_wrong_types_are_rejected(d: dict[str, Any], message: str) -> None:
    with _raises(message):
        Options.from_dict(d)


@pytest.mark.parametrize(
    "name",
    [
        "account_type_regexes",
        "start_name_regexes",
        "trim_name_regexes",
        "show_name_regexes",
        "hide_name_regexes",
    ],
)
def test_invalid_regex_is_kept_but_rejected_strictly(name: str) -> None:
    # As in TF, a pattern RE2 rejects is accepted (it matches nothing, see
    # test_regex_re2.py); the CLI's strict check refuses it.
    opts = Options.from_dict({name: [".*", "a("]})
    assert getattr(opts, name) == (".*", "a(")
    with pytest.raises(InvalidOptionError) as info:
        opts.validate_strict()
    assert str(info.value).startswith(f"Option '{name}' has an invalid regular expression 'a(': ")


def test_output_error_is_tf_text() -> None:
    with _raises("Missing required output_options for file\nE.g. -output file:outfile=..."):
        Options.from_dict({"output": "file"})


# ------------------------------------------------------------------ dump_to_file


def test_dump_to_file_forces_file_output(capsys: pytest.CaptureFixture[str]) -> None:
    o = Options.from_dict({"output": "timeline:outfile=t.json", "dump_to_file": "r.txt"})
    assert o.output == OutputSpec("file", (("outfile", "r.txt"),))
    assert capsys.readouterr().err == DUMP_NOTE.format("timeline:outfile=t.json", "r.txt")


def test_dump_to_file_with_missing_output_names_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    Options.from_dict({"dump_to_file": "r.txt"})
    assert capsys.readouterr().err == DUMP_NOTE.format("stdout", "r.txt")


def test_empty_dump_to_file_is_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    assert Options.from_dict({"dump_to_file": ""}).output.type == "stdout"
    assert capsys.readouterr().err == ""


def test_bad_output_wins_over_dump_to_file(capsys: pytest.CaptureFixture[str]) -> None:
    with _raises(UNKNOWN_TYPE.format("foo")):
        Options.from_dict({"output": "foo", "dump_to_file": "r.txt"})
    assert capsys.readouterr().err == ""


def test_other_errors_come_before_the_dump_note(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InvalidOptionError):
        Options.from_dict({"max_depth": "x", "dump_to_file": "r.txt"})
    assert capsys.readouterr().err == ""


def test_unrepresentable_outfile_round_trips_via_dump_to_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    o = Options.from_dict({"dump_to_file": "a,b"})
    d = o.to_dict()
    assert d["output"] == "stdout" and d["dump_to_file"] == "a,b"
    assert Options.from_dict(d) == o


# ------------------------------------------------------------------ to_dict / updated


def test_to_dict_keys_and_values() -> None:
    o = Options.from_dict(
        {"select": ["params", "bytes"], "output": "file:outfile=r.txt", "hide_name_regexes": ("x",)}
    )
    d = o.to_dict()
    assert list(d) == list(OPTION_NAMES)
    assert d["select"] == ["bytes", "params"] and d["hide_name_regexes"] == ["x"]
    assert d["output"] == "file:outfile=r.txt"
    assert Options.from_dict(d) == o


def test_updated_overlays_and_validates() -> None:
    base = Options.from_dict(ProfileOptionBuilder.time_and_memory())
    new = base.updated({"max_depth": 3, "select": ["params", "params"]})
    assert new.max_depth == 3 and new.select == ("params",)
    assert new.order_by == "micros" and base.max_depth == 10000
    assert base.updated({"output": "none"}).output.type == "none"
    with pytest.raises(InvalidOptionError, match="Did you mean 'select'"):
        base.updated({"selct": []})


def test_updated_dump_to_file_names_current_output(capsys: pytest.CaptureFixture[str]) -> None:
    base = Options.from_dict({"output": "timeline:outfile=t"})
    assert base.updated({"dump_to_file": "f"}).output.outfile == "f"
    assert capsys.readouterr().err == DUMP_NOTE.format("timeline:outfile=t", "f")


# ------------------------------------------------------------------ validate_strict


def test_validate_strict_accepts_known_names() -> None:
    Options(order_by="occurrence", select=SELECT_NAMES).validate_strict()


def test_validate_strict_rejects_unknown_order_by() -> None:
    with pytest.raises(InvalidOptionError) as info:
        Options(order_by="micro").validate_strict()
    assert str(info.value).startswith(
        "Invalid option '-order_by' value: 'micro'. Did you mean 'micros'? Valid values: name,"
    )


def test_validate_strict_rejects_unknown_select() -> None:
    with pytest.raises(InvalidOptionError, match=r"^Invalid option '-select' value: 'zzz'\. Valid"):
        Options(select=("micros", "zzz")).validate_strict()


# ------------------------------------------------------------------ block text


def test_block_text_matches_tf_layout() -> None:
    o = Options.from_dict(
        {
            **ProfileOptionBuilder().with_max_depth(1).build(),
            "select": ["params", "bytes"],
            "hide_name_regexes": ["a", "b"],
        }
    )
    assert o.block_text() == (
        "-max_depth                  1\n"
        "-min_bytes                  0\n"
        "-min_peak_bytes             0\n"
        "-min_residual_bytes         0\n"
        "-min_output_bytes           0\n"
        "-min_micros                 0\n"
        "-min_accelerator_micros     0\n"
        "-min_cpu_micros             0\n"
        "-min_params                 0\n"
        "-min_float_ops              0\n"
        "-min_occurrence             0\n"
        "-step                       -1\n"
        "-order_by                   name\n"
        "-account_type_regexes       .*\n"
        "-start_name_regexes         .*\n"
        "-trim_name_regexes          \n"
        "-show_name_regexes          .*\n"
        "-hide_name_regexes          a,b\n"
        "-account_displayed_op_only  false\n"
        "-select                     bytes,params\n"
        "-output                     stdout:\n"
    )
