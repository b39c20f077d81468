"""The native XSpace decoder built with ASan and UBSan.

As :mod:`tests.unit.test_native_sanitizer` does for the step decoder:
``_xplanedecode.c`` is compiled with gcc's sanitizers and run in a child Python
with ``libasan`` preloaded, on the hand-made inputs of :mod:`tests.xspace_cases`,
the real MLP capture and truncations of it, and seeded mutations of all of them.
Any sanitizer report, crash or non-zero exit fails; every result (columns or a
decline), with every event stat and with the event stats cut down to
:data:`tests.xspacecols.KEEP`, must equal the regular build's. A build with a 64-byte input limit
reaches the size check.
"""

from __future__ import annotations

import hashlib
import random
import struct
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests import xspace_cases, xspace_files
from tests.mutations import mutate
from tests.unit.test_native_sanitizer import build, libasan, problems
from tests.unit.test_native_sanitizer_codecs import _run_child
from tests.xspacecols import KEEP
from tfprof_lite._native import load
from tfprof_lite.formats.xspace.wire.native import gunzip_text
from tfprof_lite.proto import messages as pb

__all__ = ["libasan"]  # the fixture, imported for this module's tests

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "tfprof_lite" / "_native"
MUTATIONS = 3000

#: The child: decodes every input of a length-prefixed file twice with every event
#: stat, then once with the filter, and prints two digests per input (``-`` when
#: declined); every input is also decoded from a descriptor (``decode_fd``, which
#: gives its input back line by line), and must give the same result.
CHILD = textwrap.dedent(
    f"""
    import gc, gzip, hashlib, importlib, os, struct, sys
    KEEP = {KEEP!r}
    sys.path.insert(0, sys.argv[1])
    decode = importlib.import_module(sys.argv[2]).decode
    decode_fd = importlib.import_module(sys.argv[2]).decode_fd
    def from_fd(item, gunzip, keep):
        fd = os.memfd_create("x")
        try:
            os.write(fd, item)
            os.lseek(fd, 0, os.SEEK_SET)
            return decode_fd(fd, len(item), gunzip, keep)
        finally:
            os.close(fd)
    def gunzip(raw):
        return gzip.decompress(raw).decode("utf-8")
    data = open(sys.argv[3], "rb").read()
    pos, out = 0, []
    while pos < len(data):
        (size,) = struct.unpack_from("<Q", data, pos)
        item = data[pos + 8 : pos + 8 + size]
        pos += 8 + size
        pair = []
        for keep in (None, None, KEEP):
            result = decode(item, gunzip, keep)
            if from_fd(item, gunzip, keep) != result:
                raise SystemExit("decode_fd differs from decode")
            if keep is None and pair:
                continue
            if result is None:
                pair.append("-")
            else:
                parts = [bytes(p) if isinstance(p, bytearray) else p for p in result]
                pair.append(hashlib.sha256(repr(parts).encode()).hexdigest())
            del result
        out.append(" ".join(pair))
    gc.collect()
    sys.stdout.write("\\n".join(out) + "\\n")
    """
)


def _digest(result: Any) -> str:
    if result is None:
        return "-"
    parts = [bytes(p) if isinstance(p, bytearray) else p for p in result]
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _inputs() -> list[bytes]:
    rng = random.Random(11)
    hand = xspace_cases.all_inputs()
    seeds = [make().SerializeToString() for make in xspace_cases.MESSAGES.values()]
    seeds += list(xspace_cases.WIRE.values())
    try:
        real = xspace_files.jax_file("jax_h100_mlp").read_bytes()
    except pytest.skip.Exception:
        real = xspace_files.hand_space().SerializeToString()
    cuts = [real[:n] for n in range(0, len(real), max(1, len(real) // 200))]
    mutated = [mutate(seeds[i % len(seeds)], rng) for i in range(MUTATIONS)]
    mutated += [mutate(real, rng) for _ in range(30)]
    return [*hand, real, *cuts, *mutated]


def _run(libasan: str, module: Path, inputs: list[bytes]) -> subprocess.CompletedProcess[str]:
    data_file = module.parent / f"{module.stem}.inputs"
    data_file.write_bytes(b"".join(struct.pack("<Q", len(d)) + d for d in inputs))
    return _run_child(libasan, CHILD, [str(module.parent), module.stem, str(data_file)])


def test_sanitized_xspace_decoder(libasan: str, tmp_path: Path) -> None:
    module = build(tmp_path, NATIVE / "_xplanedecode.c", "_xplanedecode", f"-I{NATIVE}")
    inputs = _inputs()
    done = _run(libasan, module, inputs)
    assert problems(done) == [], done.stderr[-4000:]
    pairs = [line.split() for line in done.stdout.splitlines()]
    assert len(pairs) == len(inputs) and all(len(p) == 2 for p in pairs)
    digests, filtered = [p[0] for p in pairs], [p[1] for p in pairs]
    declined = digests.count("-")
    assert declined > 0 and len(inputs) - declined > 200  # both decoded and declined inputs
    assert sum(a != b for a, b in zip(digests, filtered)) > 50  # the filter left stats out
    regular = load("_xplanedecode")
    if regular is not None:  # the regular build gives the same results
        assert digests == [_digest(regular.decode(d, gunzip_text)) for d in inputs]
        assert filtered == [_digest(regular.decode(d, gunzip_text, KEEP)) for d in inputs]


def _space_of_size(size: int) -> bytes:
    """A valid XSpace of exactly ``size`` bytes (a plane name padded)."""
    for pad in range(size):
        data = pb.XSpace(planes=[pb.XPlane(name="p" * pad)]).SerializeToString()
        if len(data) == size:
            return bytes(data)
    raise AssertionError(size)


def test_input_limit(libasan: str, tmp_path: Path) -> None:
    """Built with a 64-byte limit: 63 bytes are decoded, 64 and 65 declined."""
    module = build(
        tmp_path,
        NATIVE / "_xplanedecode.c",
        "_xplanedecode",
        f"-I{NATIVE}",
        "-DXPLANEDECODE_LIMIT=64",
    )
    sized = [_space_of_size(n) for n in (63, 64, 65)]
    done = _run(libasan, module, sized)
    assert problems(done) == [], done.stderr[-4000:]
    assert done.stdout.split()[2:] == ["-"] * 4 and "-" not in done.stdout.split()[:2]
    regular = load("_xplanedecode")
    if regular is not None:  # the regular build decodes all three
        assert all(regular.decode(d, gunzip_text) is not None for d in sized)
