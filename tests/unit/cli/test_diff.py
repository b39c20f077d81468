"""``tfprof_lite.analysis.diff`` and ``tfprof-lite diff``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.cli import profiles
from tests.unit.cli.conftest import Runner
from tfprof_lite.analysis.diff import (
    Noise,
    ProfileDiff,
    Side,
    Values,
    compare_values,
    diff_profiles,
    render_text,
    to_json,
)
from tfprof_lite.errors import InvalidInputError


@pytest.fixture(scope="module")
def sides() -> tuple[Side, Side]:
    a = profiles.profiler().model
    b = profiles.profiler(variant="b").model
    return Side(a, "a"), Side(b, "b")


def test_compare_values_statuses_and_order() -> None:
    before = {"x": Values(10, 1, 1), "gone": Values(5, 1, 1), "same": Values(3, 1, 1)}
    after = {"x": Values(40, 2, 1), "new": Values(50, 1, 1), "same": Values(3, 1, 1)}
    diff = compare_values("op", before, after, (Values(18), Values(93)))
    assert [(e.name, e.status, e.delta) for e in diff.entries] == [
        ("new", "added", 50),
        ("x", "changed", 30),
        ("gone", "removed", -5),
    ]
    assert diff.counts == {"added": 1, "removed": 1, "changed": 1, "noise": 0, "unchanged": 1}
    assert diff.entries[1].percent == pytest.approx(300.0)
    assert diff.entries[0].percent is None
    assert (diff.total_before, diff.total_after) == (18, 93)
    assert [e.name for e in compare_values("op", before, after, min_change=10).entries] == [
        "new",
        "x",
    ]


def test_count_only_change_is_changed() -> None:
    diff = compare_values("op", {"a": Values(1, 1, 1)}, {"a": Values(1, 2, 1)})
    assert [(e.status, e.delta) for e in diff.entries] == [("changed", 0)]


def test_noise_level() -> None:
    noise = Noise(10, 10.0)
    assert not noise.significant(1000, 1009)  # under 10us
    assert not noise.significant(1000, 1090)  # under 10%
    assert noise.significant(1000, 1100) and noise.significant(100, 89)
    assert noise.significant(0, 10) and not noise.significant(0, 9)
    before = {f"op{i}": Values(1000 + i, 1, 1, 1000 + i) for i in range(1000)}
    after = {f"op{i}": Values(1000 + i + (i % 7), 1, 1, 1000 + i + (i % 7)) for i in range(1000)}
    after["op5"] = Values(1500, 1, 1, 1500)
    diff = compare_values("scope", before, after)
    assert [e.name for e in diff.entries] == ["op5"]
    moved = sum(1 for i in range(1000) if i % 7)
    assert diff.counts["noise"] == moved - 1 and diff.counts["changed"] == 1
    assert diff.median_change is not None and 0 < diff.median_change < 1
    every = compare_values("scope", before, after, noise=Noise(0, 0))
    assert len(every.entries) == diff.counts["noise"] + 1


def test_cpu_and_accelerator_apart() -> None:
    # the total stays, time moves from the CPU to the accelerator: a change
    before = {"conv": Values(100, 1, 1, cpu_micros=100)}
    after = {"conv": Values(100, 1, 1, cpu_micros=20, accelerator_micros=80)}
    diff = compare_values("op", before, after, (Values(100, 0, 0, 100), Values(100, 0, 0, 20, 80)))
    (entry,) = diff.entries
    assert (entry.status, entry.delta, entry.cpu_delta, entry.accelerator_delta) == (
        "changed",
        0,
        -80,
        80,
    )
    sides = Side(profiles.profiler().model, "a", 0), Side(profiles.profiler().model, "b", 1)
    text = render_text(ProfileDiff(*sides, {"op": diff}))
    assert "cpu 100us -> 20us (-80us); accelerator 0us -> 80us (+80us)" in text
    assert "noise level: time changes under 10us or under 10% of the time before" in text
    row = next(line for line in text.splitlines() if line.endswith("conv"))
    assert row.split()[:7] == ["~", "±0us", "+0.0%", "100us", "100us", "-80us", "+80us"]


def test_two_profiles(sides: tuple[Side, Side]) -> None:
    diff = diff_profiles(*sides)
    op = {e.name: e for e in diff.views["op"].entries}
    assert op["MatMul"].status == "changed" and op["MatMul"].delta > 0
    assert op["MatMul"].before.nodes == 2 and op["MatMul"].after.nodes == 3
    scope = {e.name: e for e in diff.views["scope"].entries}
    assert scope["dense3/MatMul"].status == "added"
    assert scope["dense2/Relu"].status == "removed"
    assert scope["dense1/MatMul"].after.micros == 3 * 40 + 1
    deltas = [abs(e.delta) for e in diff.views["scope"].entries]
    assert deltas == sorted(deltas, reverse=True)


def test_two_steps_of_one_profile(sides: tuple[Side, Side]) -> None:
    model = sides[0].model
    diff = diff_profiles(Side(model, "a", 0), Side(model, "a", 2), ["op"], noise=Noise(0, 0))
    assert list(diff.views) == ["op"]
    matmul = next(e for e in diff.views["op"].entries if e.name == "MatMul")
    assert (matmul.before.micros, matmul.after.micros) == (70, 74)
    assert (matmul.before.cpu_micros, matmul.after.cpu_micros) == (70, 74)
    quiet = diff_profiles(Side(model, "a", 0), Side(model, "a", 2), views=["op"])
    assert not quiet.views["op"].entries  # 4us, 5.7%: noise by default
    assert quiet.views["op"].counts["noise"] == 5


def test_missing_step(sides: tuple[Side, Side]) -> None:
    with pytest.raises(InvalidInputError, match=r"a: no step 9 in this profile \(steps: 0, 1, 2\)"):
        diff_profiles(Side(sides[0].model, "a", 9), sides[1])


def test_text_and_json(sides: tuple[Side, Side]) -> None:
    diff = diff_profiles(*sides)
    text = render_text(diff, limit=2)
    assert text.startswith("before: a (average of 3 steps)\nafter:  b (average of 3 steps)\n")
    assert "Op view (op types, self time)" in text and "Scope view" in text
    assert "more (--limit 0 shows all)" in text
    assert "\x1b[" not in text
    doc = to_json(diff)
    assert doc["schema"] == "tfprof_lite.diff" and doc["version"] == 2
    assert doc["views"]["op"]["noise"]["micros"] == 10
    names = {e["name"]: e for e in doc["views"]["scope"]["entries"]}
    assert names["dense3/MatMul"]["status"] == "added"
    assert names["dense3/MatMul"]["delta_percent"] is None
    json.dumps(doc)
    assert diff.to_dict() == doc and diff.to_text(2) == text


def test_cli_text(run: Runner, data_dir: Path) -> None:
    result = run("diff", data_dir / "profile_2", data_dir / "b" / "profile_2")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == f"before: {data_dir / 'profile_2'} (average of 3 steps)"
    assert any(line.startswith("+") and line.endswith("dense3/MatMul") for line in lines)
    assert any(line.startswith("-") and line.endswith("dense2/Relu") for line in lines)
    assert any(line.startswith("~") and line.endswith("  MatMul") for line in lines)


def test_cli_steps_and_json(run: Runner, profile: Path) -> None:
    result = run("diff", profile, "--steps", "0,2", "--json", "--views", "op")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["before"] == {"source": str(profile), "step": 0}
    assert doc["after"] == {"source": str(profile), "step": 2}
    assert list(doc["views"]) == ["op"]
    assert doc["views"]["op"]["counts"]["changed"] == 0
    assert doc["views"]["op"]["counts"]["noise"] == 5
    loud = run(
        "diff", profile, "--steps", "0,2", "--json", "--noise-micros", 0, "--noise-percent", 0
    )
    assert json.loads(loud.out)["views"]["op"]["counts"]["changed"] == 5
    text = run("diff", profile, "--steps", "0,2", "--noise-micros", 3, "--noise-percent", 5).out
    assert "noise level: time changes under 3us or under 5% of the time before" in text


def test_cli_min_change_and_color(run: Runner, data_dir: Path) -> None:
    a, b = data_dir / "profile_2", data_dir / "b" / "profile_2"
    result = run("--color", "diff", a, b, "--min-change", 50, "--limit", 0)
    assert result.code == 0
    assert "\x1b[31m" in result.out  # slower entries in red
    assert "dense2/Relu" not in result.out  # changed by 8us only


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["A"], 2, "give two profiles, or one profile and --steps S1,S2"),
        (["A", "--steps", "1"], 2, "--steps expects two steps like 0,4"),
        (["A", "--views", "graph"], 2, "--views takes op and/or scope"),
        (["A", "--steps", "0,7"], 1, "no step 7 in this profile"),
        (["A", "A.missing"], 1, "A.missing: cannot read"),
        (["A", "A", "--limit", "-1"], 2, "--limit"),
    ],
)
def test_cli_errors(run: Runner, profile: Path, args: list[str], code: int, message: str) -> None:
    argv = [a.replace("A", str(profile)) if a.startswith("A") else a for a in args]
    result = run("diff", *argv)
    assert result.code == code
    assert result.err.count("\n") == 1
    assert message.replace("A.missing", f"{profile}.missing") in result.err
