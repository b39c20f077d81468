"""Fuzz cases: which files (mutated or not) a target gets, rebuilt from a seed.

A case is a pure function of ``(corpus, target, seed, index)``: the same numbers
always give the same bytes, so a worker process builds its cases itself and the
parent rebuilds only the ones it has to save as reproducers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from tests.fuzz.mutate import mutate
from tests.fuzz.wire_tree import MessageIndex, index_message
from tfprof_lite.proto import messages as pb

__all__ = [
    "CLI_COMMANDS",
    "CORPUS_DIR",
    "KINDS",
    "TARGETS",
    "Case",
    "Corpus",
    "make_case",
    "seed_cases",
]

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
#: Corpus kinds (the part of a file name after ``__``, less any ``_<suffix>``) and
#: the message each one holds.
KINDS: dict[str, Any] = {
    "graph": pb.GraphDef,
    "op_log": pb.OpLogProto,
    "run_meta": pb.RunMetadata,
    "profile": pb.ProfileProto,
}
#: The fuzz targets: a saved profile through the API, a profile built from raw
#: protos through the API, and the command line.
TARGETS = ("profile", "build", "cli")
#: Probability that a case gets a valid file of another kind (a wrong message type).
WRONG_TYPE_RATE = 0.1
#: Probability that a CLI input file is written in protobuf text format.
TEXT_FORMAT_RATE = 0.15

#: CLI commands run on a mutated input; ``{in}`` is the input arguments (a profile
#: file, or ``--graph/--run-meta/--op-log``), ``{raw}`` the latter only, ``{out}``
#: a scratch directory and ``{seed}`` an unmutated profile file (for ``diff``).
CLI_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("scope", "{in}", "-max_depth", "4", "-select", "micros,bytes,params,float_ops"),
    ("graph", "{in}", "-max_depth", "3"),
    ("op", "{in}", "-order_by", "micros", "-select", "micros,occurrence,tensor_value"),
    ("code", "{in}", "-max_depth", "5", "-select", "micros,bytes"),
    ("advise", "{in}"),
    ("overview", "{in}"),
    ("overview", "{in}", "--json"),
    ("memory", "{in}"),
    ("kernels", "{in}", "--json"),
    ("timeline", "{in}", "-o", "{out}/steps.json"),
    (
        "timeline",
        "{raw}",
        "-o",
        "{out}/t.json.gz",
        "--step",
        "0",
        "--show-memory",
        "--show-dataflow",
    ),
    ("pprof", "{in}", "--view", "scope", "--select", "micros,bytes", "-o", "{out}/p.pb.gz"),
    ("report", "{in}", "-o", "{out}/report.html"),
    ("diff", "{seed}", "{in}"),
)


@dataclass
class Case:
    """One fuzz input.

    Attributes:
        target: one of :data:`TARGETS`.
        index: the case number within its target (-1 for an unmutated seed case).
        files: input file name -> content. API targets use the names ``profile``,
            ``graph``, ``op_log``, ``run_meta``, ``run_meta_1``; the CLI uses the
            names as file names.
        argv: the CLI arguments, with ``{dir}`` for the directory the files are in.
        notes: how the files were made (seed files, edits).
    """

    target: str
    index: int
    files: dict[str, bytes]
    argv: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Corpus:
    """The seed files, by model and kind (``<model>__<kind>.pb``)."""

    def __init__(self, directory: Path = CORPUS_DIR) -> None:
        self.directory = directory
        self.files: dict[str, bytes] = {
            path.name: path.read_bytes() for path in sorted(directory.glob("*.pb"))
        }
        if not self.files:
            raise FileNotFoundError(f"no *.pb seed files in {directory}")
        self._indexes: dict[tuple[str, str], MessageIndex | None] = {}

    @staticmethod
    def kind_of(name: str) -> str:
        """The kind of corpus file ``name`` (``graph``, ``op_log``, ...)."""
        tail = name.split("__", 1)[1]
        return next(kind for kind in KINDS if tail.startswith(kind))

    @cached_property
    def models(self) -> list[str]:
        """Model names, sorted."""
        return sorted({name.split("__", 1)[0] for name in self.files})

    def names(self, kind: str, model: str | None = None) -> list[str]:
        """Sorted file names of one kind (of one model)."""
        return [
            n
            for n in self.files
            if self.kind_of(n) == kind and (model is None or n.startswith(f"{model}__"))
        ]

    def index(self, name: str, kind: str) -> MessageIndex | None:
        """The field index of file ``name`` read as a ``kind`` message (cached)."""
        key = (name, kind)
        if key not in self._indexes:
            self._indexes[key] = index_message(self.files[name], KINDS[kind].DESCRIPTOR)
        return self._indexes[key]

    def warm(self) -> None:
        """Index every file as its own kind (before forking, so workers share it)."""
        for name in self.files:
            self.index(name, self.kind_of(name))

    @cached_property
    def donors(self) -> list[bytes]:
        """Every file's content (splice partners)."""
        return list(self.files.values())


def _variant(rng: random.Random, corpus: Corpus, name: str, notes: list[str]) -> bytes:
    """``name``'s content or, sometimes, another kind's file; then mutated."""
    kind = corpus.kind_of(name)
    if rng.random() < WRONG_TYPE_RATE:
        other = rng.choice([n for n in corpus.files if corpus.kind_of(n) != kind])
        notes.append(f"wrong_type({other} as {kind})")
        name = other
    else:
        notes.append(f"seed({name})")
    data, edits = mutate(rng, corpus.files[name], corpus.index(name, kind), corpus.donors)
    notes.extend(edits)
    return data


def _profile_case(rng: random.Random, corpus: Corpus, index: int) -> Case:
    notes: list[str] = []
    name = rng.choice(corpus.names("profile"))
    return Case("profile", index, {"profile": _variant(rng, corpus, name, notes)}, notes=notes)


def _raw_files(corpus: Corpus, model: str) -> dict[str, str]:
    """Role -> corpus file name of one model's raw protos."""
    metas = corpus.names("run_meta", model)
    return {
        "graph": corpus.names("graph", model)[0],
        "op_log": corpus.names("op_log", model)[0],
        "run_meta": metas[0],
        "run_meta_1": metas[-1],
    }


def _build_case(rng: random.Random, corpus: Corpus, index: int) -> Case:
    model = rng.choice(corpus.models)
    roles = _raw_files(corpus, model)
    roles["op_log"] = rng.choice(corpus.names("op_log", model))
    if rng.random() < 0.2:
        del roles["op_log"]
    if rng.random() < 0.5:
        del roles["run_meta_1"]
    victims = rng.sample(sorted(roles), rng.choice((1, 1, 1, 2)))
    notes = [f"model({model})"]
    files: dict[str, bytes] = {}
    for role, name in roles.items():
        if role in victims:
            notes.append(f"{role}:")
            files[role] = _variant(rng, corpus, name, notes)
        else:
            files[role] = corpus.files[name]
    return Case("build", index, files, notes=notes)


def _as_text(kind: str, data: bytes) -> bytes | None:
    """``data`` in protobuf text format, when it parses as ``kind``."""
    message = KINDS[kind]()
    try:
        message.ParseFromString(data)
    except Exception:  # any parse failure: keep the binary file
        return None
    text: str = text_format.MessageToString(message)
    return text.encode()


def _cli_file(
    rng: random.Random, corpus: Corpus, name: str, stem: str, notes: list[str]
) -> tuple[str, bytes]:
    """A mutated CLI input file (sometimes in text format) and its file name."""
    kind = corpus.kind_of(name)
    if rng.random() < TEXT_FORMAT_RATE:
        text = _as_text(kind, corpus.files[name])
        if text is not None:
            notes.append(f"text_format({name})")
            data, edits = mutate(rng, text, None, [])
            notes.extend(edits)
            return f"{stem}.pbtxt", data
    return f"{stem}.pb", _variant(rng, corpus, name, notes)


def _cli_argv(command: tuple[str, ...], inputs: list[str]) -> list[str]:
    argv: list[str] = []
    for arg in command:
        if arg in ("{in}", "{raw}"):
            argv.extend(inputs)
        else:
            argv.append(arg.replace("{out}", "{dir}").replace("{seed}", "{dir}/seed_profile_1"))
    return argv


def _seed_file(corpus: Corpus, command: tuple[str, ...]) -> dict[str, bytes]:
    """The unmutated profile a command compares with (``diff``), if it needs one."""
    if "{seed}" not in command:
        return {}
    return {"seed_profile_1": corpus.files[corpus.names("profile")[0]]}


def _cli_case(rng: random.Random, corpus: Corpus, index: int) -> Case:
    command = rng.choice(CLI_COMMANDS)
    notes: list[str] = [f"command({command[0]})"]
    files = _seed_file(corpus, command)
    use_profile = "{raw}" not in command and (command[0] == "diff" or rng.random() < 0.6)
    if use_profile:
        name, data = _cli_file(rng, corpus, rng.choice(corpus.names("profile")), "profile_1", notes)
        files[name] = data
        inputs = [f"{{dir}}/{name}"]
    else:
        inputs = _cli_raw_inputs(rng, corpus, files, notes)
    return Case("cli", index, files, argv=_cli_argv(command, inputs), notes=notes)


def _cli_raw_inputs(
    rng: random.Random | None, corpus: Corpus, files: dict[str, bytes], notes: list[str]
) -> list[str]:
    """Writes ``--graph/--op-log/--run-meta`` files into ``files``, one of them mutated
    (none without ``rng``); returns their arguments."""
    model = rng.choice(corpus.models) if rng is not None else corpus.models[0]
    roles = _raw_files(corpus, model)
    victim = rng.choice(sorted(roles)) if rng is not None else ""
    args: list[str] = []
    metas: list[str] = []
    for role, name in roles.items():
        if rng is not None and role == victim:
            notes.append(f"{role}:")
            file_name, data = _cli_file(rng, corpus, name, role, notes)
        else:
            file_name, data = f"{role}.pb", corpus.files[name]
        files[file_name] = data
        if role.startswith("run_meta"):
            metas.append(f"{{dir}}/{file_name}")
        else:
            args.extend([f"--{role.replace('_', '-')}", f"{{dir}}/{file_name}"])
    return [*args, "--run-meta", ",".join(metas)]


_MAKERS = {"profile": _profile_case, "build": _build_case, "cli": _cli_case}


def make_case(corpus: Corpus, target: str, index: int, seed: int) -> Case:
    """Case ``index`` of ``target`` for campaign seed ``seed`` (deterministic); the
    ``native`` and ``xspace`` targets' cases are made by :mod:`tests.fuzz.native`
    and :mod:`tests.fuzz.xspace`."""
    if target == "native":
        from tests.fuzz.native import native_case

        return native_case(corpus, index, seed)
    if target == "xspace":
        from tests.fuzz.xspace import xspace_case

        return xspace_case(corpus, index, seed)
    rng = random.Random(f"{seed}/{target}/{index}")
    return _MAKERS[target](rng, corpus, index)


def seed_cases(corpus: Corpus, target: str) -> list[Case]:
    """Unmutated cases: every seed file through ``target`` (each should be accepted)."""
    if target == "profile":
        return [
            Case(target, -1, {"profile": corpus.files[n]}, notes=[f"seed({n})"])
            for n in corpus.names("profile")
        ]
    if target == "build":
        cases = []
        for model in corpus.models:
            roles = _raw_files(corpus, model)
            files = {role: corpus.files[name] for role, name in roles.items()}
            cases.append(Case(target, -1, files, notes=[f"model({model})"]))
        return cases
    out = []
    for command in CLI_COMMANDS:
        files = _seed_file(corpus, command)
        if "{raw}" in command:
            inputs = _cli_raw_inputs(None, corpus, files, [])
        else:
            files["profile_1.pb"] = corpus.files[corpus.names("profile")[0]]
            inputs = ["{dir}/profile_1.pb"]
        argv = _cli_argv(command, inputs)
        out.append(Case(target, -1, files, argv=argv, notes=[f"command({command[0]})"]))
    return out
