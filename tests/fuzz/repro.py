"""Reproducers: an ``other`` case saved as files, and its replay.

A reproducer is a directory ``<root>/<signature slug>/<target>-<index>/`` with the
case's input files under ``files/`` and ``case.json`` (target, seed, index, CLI
arguments, how the files were made, and the outcome). :func:`minimize` shrinks a
case (``minimal-<target>-<index>/``) by dropping optional inputs and runs of fields
while the signature still reproduces. Replay it with
``python -m tests.fuzz.campaign --replay DIR``: the case runs in-process without
any guard, so an exception shows its full traceback.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from tests.fuzz.cases import KINDS, Case, Corpus
from tests.fuzz.runner import RunConfig, run_in_worker
from tests.fuzz.targets import Outcome, run_target
from tests.fuzz.wire_tree import MessageIndex, apply_edits, index_message

__all__ = ["load_reproducer", "minimize", "replay", "save_reproducer", "slug"]


def slug(signature: str) -> str:
    """A directory name for a signature."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", signature).strip("_")[:120] or "unknown"


def save_reproducer(root: Path, case: Case, outcome: Outcome, seed: int, prefix: str = "") -> Path:
    """Write ``case`` (which ended as ``outcome``) under ``root``; returns its directory."""
    where = root / slug(outcome.signature) / f"{prefix}{case.target}-{case.index}"
    (where / "files").mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        (where / "files" / name).write_bytes(data)
    record = {
        "target": case.target,
        "seed": seed,
        "index": case.index,
        "argv": case.argv,
        "notes": case.notes,
        "outcome": outcome.to_dict(),
        "replay": f"python -m tests.fuzz.campaign --replay {where}",
    }
    (where / "case.json").write_text(json.dumps(record, indent=2) + "\n")
    return where


def load_reproducer(where: Path) -> Case:
    """The case saved in reproducer directory ``where``."""
    record = json.loads((where / "case.json").read_text())
    files = {p.name: p.read_bytes() for p in sorted((where / "files").iterdir())}
    return Case(record["target"], record["index"], files, record["argv"], record["notes"])


def replay(where: Path) -> Outcome:
    """Run the saved case in this process (exceptions propagate with their traceback)."""
    case = load_reproducer(where)
    with tempfile.TemporaryDirectory(prefix="tfprof-fuzz-replay-") as tmp:
        return run_target(case, Path(tmp))


def _roles_to_drop(case: Case) -> list[str]:
    """Inputs a build case can do without."""
    return (
        [r for r in ("op_log", "run_meta_1") if r in case.files] if case.target == "build" else []
    )


def _kind_of_file(name: str) -> str | None:
    """The message kind of a case file name (``run_meta_1`` -> ``run_meta``)."""
    stem = name.split(".", 1)[0]
    for kind in KINDS:
        if stem.startswith(kind):
            return kind
    return None


class _Reducer:
    """Greedy reduction of one case while its signature still reproduces."""

    def __init__(self, case: Case, signature: str, corpus: Corpus, budget: int) -> None:
        self.case = case
        self.signature = signature
        self.corpus = corpus
        self.budget = budget
        self.config = RunConfig(timeout=10.0, batch=1, grace=10.0)

    def fails(self, candidate: Case) -> bool:
        """Whether ``candidate`` still ends with the signature (spends one run)."""
        self.budget -= 1
        outcome = run_in_worker([candidate], self.corpus, self.config)[0]
        return outcome.signature == self.signature

    def with_file(self, name: str, data: bytes | None) -> Case:
        """The current case with file ``name`` replaced (or removed when ``data`` is None)."""
        files = dict(self.case.files)
        if data is None:
            del files[name]
        else:
            files[name] = data
        return Case(self.case.target, self.case.index, files, self.case.argv, self.case.notes)

    def drop_roles(self) -> None:
        """Leave out each optional input the signature does not need."""
        for role in _roles_to_drop(self.case):
            candidate = self.with_file(role, None)
            if self.budget > 0 and self.fails(candidate):
                self.case = candidate

    def reduce_file(self, name: str) -> None:
        """Drop runs of fields (halves, quarters, ... single fields) of file ``name``."""
        kind = _kind_of_file(name)
        if kind is None:
            return
        chunk = 0
        while self.budget > 0:
            index = index_message(self.case.files[name], KINDS[kind].DESCRIPTOR)
            if index is None or not index.fields:
                return
            count = len(index.fields)
            chunk = max(count // 2, 1) if chunk == 0 else min(chunk, count)
            if not self._drop_one_chunk(name, index, chunk):
                if chunk == 1:
                    return
                chunk //= 2

    def _drop_one_chunk(self, name: str, index: MessageIndex, chunk: int) -> bool:
        for start in range(0, len(index.fields), max(chunk, 1)):
            if self.budget <= 0:
                return False
            edits = {p: b"" for p in range(start, min(start + chunk, len(index.fields)))}
            candidate = self.with_file(name, apply_edits(index, edits))
            if self.fails(candidate):
                self.case = candidate
                return True
        return False


def minimize(case: Case, signature: str, corpus: Corpus, budget: int = 400) -> Case:
    """A smaller case that still ends with ``signature``: optional inputs left out, then
    fields of each input dropped greedily; at most ``budget`` runs (in forked workers)."""
    reducer = _Reducer(case, signature, corpus, budget)
    if not reducer.fails(case):
        return case  # does not reproduce on its own (depends on an earlier input)
    reducer.drop_roles()
    for name in sorted(reducer.case.files):
        if not name.startswith("seed_"):
            reducer.reduce_file(name)
    return reducer.case
