"""The fuzz campaign behind ``make fuzz``: many mutated inputs, counts, reproducers.

Usage::

    python -m tests.fuzz.campaign [--n 10000] [--seed 0] [--out /tmp/fuzz_repro]
    python -m tests.fuzz.campaign --replay /tmp/fuzz_repro/<signature>/<case>

``--n`` mutated inputs are shared evenly by the targets (``profile``, ``build``,
``cli``), ``--native`` more go to the native decoder target (``native``,
:mod:`tests.fuzz.native`; thousands of times faster per input) and ``--xspace``
more to the native XSpace decoder target (``xspace``, :mod:`tests.fuzz.xspace`); then
``--subprocess`` CLI cases that were rejected are re-run as real
processes. It prints accepted / clean rejection / other per target and every
``other`` signature (marked ``known`` when it is in ``tests.fuzz.test_fuzz.KNOWN``)
with up to ``--keep`` reproducers each, written under ``--out`` with a
``summary.json``. The exit status is 1 when a signature is not known, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from tests.fuzz import native, xspace
from tests.fuzz.cases import TARGETS, Case, Corpus, make_case, seed_cases
from tests.fuzz.repro import minimize, replay, save_reproducer
from tests.fuzz.runner import RunConfig, run_cases, run_cli_subprocess
from tests.fuzz.targets import Outcome
from tfprof_lite.formats.xspace.wire.native import available as xspace_available
from tfprof_lite.proto.steps import native_available

__all__ = ["Tally", "main", "run_campaign"]

STATUSES = ("accepted", "clean", "other")


class Tally:
    """Counts per target and status, and the ``other`` outcomes by signature."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter[str]] = {t: Counter() for t in TARGETS}
        self.others: dict[str, list[Outcome]] = {}

    def add(self, outcome: Outcome) -> None:
        """Count one outcome."""
        self.counts.setdefault(outcome.target, Counter())[outcome.status] += 1
        if outcome.status == "other":
            self.others.setdefault(outcome.signature, []).append(outcome)

    def table(self) -> str:
        """The counts as a small text table."""
        rows = [f"{'target':<16}{'inputs':>8}{'accepted':>10}{'clean':>8}{'other':>8}"]
        for target, counts in self.counts.items():
            total = sum(counts.values())
            if total:
                cells = "".join(f"{counts[s]:>{w}}" for s, w in zip(STATUSES, (10, 8, 8)))
                rows.append(f"{target:<16}{total:>8}{cells}")
        return "\n".join(rows)


def _known() -> dict[str, str]:
    from tests.fuzz.test_fuzz import KNOWN

    return KNOWN


def _specs(n: int, targets: Sequence[str]) -> list[tuple[str, int]]:
    """``n`` case numbers shared evenly by ``targets``."""
    share = {
        t: n // len(targets) + (1 if i < n % len(targets) else 0) for i, t in enumerate(targets)
    }
    return [(t, i) for t in targets for i in range(share[t])]


def _size(case: Case) -> int:
    return sum(len(data) for data in case.files.values())


def _save(
    tally: Tally,
    corpus: Corpus,
    args: argparse.Namespace,
    out: Path,
    cases: dict[tuple[str, int], Case],
) -> dict[str, list[str]]:
    """Write up to ``--keep`` reproducers per signature, the smallest inputs first, and
    a minimized copy of the smallest (``--minimize`` runs at most)."""
    saved: dict[str, list[str]] = {}
    for signature, outcomes in sorted(tally.others.items()):
        built = [
            cases.get((o.target, o.index)) or make_case(corpus, o.target, o.index, args.seed)
            for o in outcomes
        ]
        ranked = sorted(zip(built, outcomes), key=lambda pair: _size(pair[0]))
        saved[signature] = [
            str(save_reproducer(out, case, outcome, args.seed))
            for case, outcome in ranked[: args.keep]
        ]
        case, outcome = ranked[0]
        if args.minimize > 0 and case.target in TARGETS:
            small = minimize(case, signature, corpus, args.minimize)
            if _size(small) < _size(case):
                where = save_reproducer(out, small, outcome, args.seed, prefix="minimal-")
                saved[signature].insert(0, str(where))
    return saved


def _subprocess_checks(
    corpus: Corpus, seed: int, cli_outcomes: list[Outcome], count: int
) -> tuple[list[Outcome], dict[tuple[str, int], Case]]:
    """Re-run the first ``count`` rejected CLI cases as real processes."""
    picked = [o for o in cli_outcomes if o.status != "accepted"][:count]
    results, cases = [], {}
    for outcome in picked:
        case = make_case(corpus, "cli", outcome.index, seed)
        case.target = "cli-subprocess"
        result = run_cli_subprocess(case)
        if result.status == "other":
            result.signature = result.signature.replace("@ cli", "@ cli-subprocess")
        results.append(result)
        cases[(case.target, case.index)] = case
    return results, cases


def run_campaign(args: argparse.Namespace) -> int:
    """Run the campaign described by the parsed arguments; returns the exit status."""
    corpus = Corpus()
    corpus.warm()
    config = RunConfig(seed=args.seed, timeout=args.timeout, batch=args.batch)
    targets = [t for t in args.targets.split(",") if t]
    tally = Tally()
    started = time.monotonic()
    for target in targets:
        bad = [
            o
            for o in run_cases(seed_cases(corpus, target), corpus, config)
            if o.status != "accepted"
        ]
        if bad:
            print(f"seed files not accepted by {target}: {bad}", file=sys.stderr)
    if args.native and not native_available():
        print("the native decoder is not built: native target skipped", file=sys.stderr)
        if os.environ.get("CI", "") == "true":
            return 1
        args.native = 0
    if args.xspace and not xspace_available():
        print("the native XSpace decoder is not built: xspace target skipped", file=sys.stderr)
        if os.environ.get("CI", "") == "true":
            return 1
        args.xspace = 0
    specs = _specs(args.n, targets) + [("native", i) for i in range(args.native)]
    specs += [("xspace", i) for i in range(args.xspace)]
    if args.native:
        native.warm(corpus)
        tally.counts["native"] = Counter()
    if args.xspace:
        xspace.warm(corpus)
        tally.counts["xspace"] = Counter()
    cli_outcomes = []
    total = len(specs)
    for done, outcome in enumerate(run_cases(specs, corpus, config), 1):
        tally.add(outcome)
        if outcome.target == "cli":
            cli_outcomes.append(outcome)
        if done % 1000 == 0:
            print(f"  {done}/{total} inputs, {time.monotonic() - started:.0f} s", file=sys.stderr)
    tally.counts["cli-subprocess"] = Counter()
    sub_outcomes, sub_cases = _subprocess_checks(corpus, args.seed, cli_outcomes, args.subprocess)
    for outcome in sub_outcomes:
        tally.add(outcome)
    return _report(tally, corpus, args, sub_cases, time.monotonic() - started)


def _report(
    tally: Tally,
    corpus: Corpus,
    args: argparse.Namespace,
    cases: dict[tuple[str, int], Case],
    seconds: float,
) -> int:
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    saved = _save(tally, corpus, args, out, cases)
    known = _known()
    print(
        f"fuzz campaign: seed {args.seed}, {args.n} mutated inputs "
        f"(+{args.native} native decoder, +{args.xspace} XSpace decoder), {seconds:.0f} s"
    )
    print(tally.table())
    new = 0
    for signature, outcomes in sorted(tally.others.items(), key=lambda kv: -len(kv[1])):
        label = "known" if signature in known else "NEW"
        new += label == "NEW"
        print(f"\n[{label}] {signature}  x{len(outcomes)}\n  {outcomes[0].message}")
        for frame in outcomes[0].frames[-3:]:
            print(f"    at {frame}")
        for path in saved[signature]:
            print(f"  reproducer: {path}")
    summary = {
        "seed": args.seed,
        "n": args.n,
        "native": args.native,
        "xspace": args.xspace,
        "counts": {t: dict(c) for t, c in tally.counts.items()},
        "signatures": {
            s: {
                "count": len(o),
                "known": s in known,
                "example": o[0].to_dict(),
                "reproducers": saved[s],
            }
            for s, o in tally.others.items()
        },
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\nsummary: {out / 'summary.json'}; {new} new signature(s)")
    return 1 if new else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.campaign", description=__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    env = os.environ
    parser.add_argument("--n", type=int, default=int(env.get("FUZZ_N") or 10_000))
    parser.add_argument(
        "--native",
        type=int,
        default=int(env.get("FUZZ_NATIVE_N") or 30_000),
        help="inputs of the native decoder target, on top of --n (0: none)",
    )
    parser.add_argument(
        "--xspace",
        type=int,
        default=int(env.get("FUZZ_XSPACE_N") or 5_000),
        help="inputs of the native XSpace decoder target, on top of --n (0: none)",
    )
    parser.add_argument("--seed", type=int, default=int(env.get("FUZZ_SEED") or 0))
    parser.add_argument("--out", default=env.get("FUZZ_OUT") or "/tmp/fuzz_repro")
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per input")
    parser.add_argument("--batch", type=int, default=200, help="inputs per worker process")
    parser.add_argument("--keep", type=int, default=3, help="reproducers per signature")
    parser.add_argument(
        "--subprocess", type=int, default=20, help="rejected CLI cases re-run as real processes"
    )
    parser.add_argument(
        "--minimize", type=int, default=300, help="runs to shrink one reproducer (0: none)"
    )
    parser.add_argument("--replay", type=Path, help="run one saved reproducer and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    args = _parser().parse_args(argv)
    if args.replay is not None:
        outcome = replay(args.replay)
        print(json.dumps(outcome.to_dict()))
        return 0 if outcome.status != "other" else 1
    unknown = set(args.targets.split(",")) - set(TARGETS)
    if unknown:
        print(f"unknown targets: {sorted(unknown)}; pick from {TARGETS}", file=sys.stderr)
        return 2
    return run_campaign(args)


if __name__ == "__main__":
    sys.exit(main())
