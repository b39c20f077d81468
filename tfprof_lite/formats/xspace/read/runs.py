"""Finding the profiler runs under a path: a run folder, a logdir, or a folder above logdirs.

The profilers write ``LOGDIR/plugins/profile/<run>/<host>.xplane.pb``; Keras'
``TensorBoard(log_dir=LOGDIR)`` callback writes its profiles one level down,
in ``LOGDIR/train/plugins/profile/<run>/``. So a directory is searched for
logdirs (folders holding ``plugins/profile/``) itself and up to
:data:`MAX_DEPTH` levels below it, breadth first and in name order, skipping
hidden folders and not looking inside ``plugins`` folders. A
``plugins/profile`` folder, or its ``plugins`` folder, is a logdir's runs too.

:func:`pick_run` chooses the run to read: the one named (``--run``), else
the newest (run folders are named by their start time, so the last name in
order; among equal names, the first logdir found). It says which run it took
and which others there were, so that the command line can tell the user.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tfprof_lite.base.shown import shown
from tfprof_lite.errors import InvalidInputError

__all__ = [
    "MAX_DEPTH",
    "SUFFIX",
    "Run",
    "RunPick",
    "find_runs",
    "host_files",
    "is_xspace_dir",
    "is_xspace_file",
    "pick_host",
    "pick_run",
]

SUFFIX = ".xplane.pb"
_PROFILE_DIR = os.path.join("plugins", "profile")
_SNIFF = 1 << 16
#: How many levels below the given directory logdirs are looked for.
MAX_DEPTH = 3
#: The most directories one search looks into (a huge tree is not walked).
_MAX_DIRS = 4096
_PLUGINS = "plugins"
_PROFILE = "profile"


@dataclass(frozen=True)
class Run:
    """One run folder: ``root/name`` where ``root`` is a logdir's ``plugins/profile``."""

    #: The logdir (the folder holding ``plugins/profile``), as reached from the path given.
    logdir: str
    #: The logdir's ``plugins/profile`` folder.
    root: str
    #: The run folder's name (its start time, for the profilers).
    name: str

    @property
    def folder(self) -> str:
        """The run folder itself."""
        return os.path.join(self.root, self.name)


@dataclass(frozen=True)
class RunPick:
    """What :func:`pick_run` chose: the files to read, and the run they are of."""

    #: ``{host: file}`` of the run (or the one file given).
    hosts: dict[str, str]
    #: The run read, when it was chosen in a logdir (None: a file or run folder given).
    run: Run | None = None
    #: The other runs found beside it.
    others: tuple[Run, ...] = field(default=())


def host_files(run_dir: str) -> dict[str, str]:
    """``{host: file}`` of the ``<host>.xplane.pb`` files directly in ``run_dir``.

    A host name that is not UTF-8 is given as :func:`~tfprof_lite.base.shown.shown`
    writes it; the file keeps its own name.
    """
    try:
        entries = sorted(os.listdir(run_dir))
    except OSError:
        return {}
    return {
        shown(entry[: -len(SUFFIX)]): os.path.join(run_dir, entry)
        for entry in entries
        if entry.endswith(SUFFIX) and os.path.isfile(os.path.join(run_dir, entry))
    }


def _subdirs(path: str) -> list[str]:
    try:
        entries = sorted(os.listdir(path))
    except OSError:
        return []
    return [e for e in entries if os.path.isdir(os.path.join(path, e))]


def _runs_in(logdir: str, root: str) -> list[Run]:
    return [Run(logdir, root, n) for n in _subdirs(root) if host_files(os.path.join(root, n))]


def _logdir_roots(path: str) -> list[tuple[str, str]]:
    """``(logdir, plugins/profile folder)`` of every logdir at or below ``path``."""
    name = os.path.basename(os.path.normpath(path))
    if name == _PROFILE and _runs_in(path, path):
        return [(path, path)]
    if name == _PLUGINS and _runs_in(path, os.path.join(path, _PROFILE)):
        return [(path, os.path.join(path, _PROFILE))]
    found: list[tuple[str, str]] = []
    level, visited = [path], 0
    for depth in range(MAX_DEPTH + 1):
        below: list[str] = []
        for folder in level:
            visited += 1
            root = os.path.join(folder, _PLUGINS, _PROFILE)
            if os.path.isdir(root):
                found.append((folder, root))
            if depth < MAX_DEPTH and visited < _MAX_DIRS:
                below += [
                    os.path.join(folder, sub)
                    for sub in _subdirs(folder)
                    if sub != _PLUGINS and not sub.startswith(".")
                ]
        level = below
    return found


def find_runs(path: str) -> list[Run]:
    """Every run folder with profiles in the logdirs at or below directory ``path``,
    logdir by logdir (breadth first, in name order), each's runs in name order."""
    return [run for logdir, root in _logdir_roots(path) for run in _runs_in(logdir, root)]


def _named(runs: list[Run], name: str, path: str) -> Run:
    matches = [r for r in runs if name in (r.name, os.path.relpath(r.folder, path))]
    if not matches:
        names = ", ".join(shown(r.name) for r in runs)
        raise InvalidInputError(
            f"{shown(path)}: no run {shown(name)!r} with profiles (runs: {names}); "
            "pick one with --run"
        )
    if len(matches) > 1:
        where = ", ".join(shown(r.logdir) for r in matches)
        raise InvalidInputError(
            f"{shown(path)}: run {shown(name)!r} is in several logdirs ({where}); "
            "pass its folder instead"
        )
    return matches[0]


def pick_run(path: str, run: str | None = None) -> RunPick:
    """The files to read for ``path`` (a file, run folder, logdir or a folder above logdirs).

    Args:
        path: what the user named.
        run: the run folder's name to read in a logdir (default: the newest).

    Raises:
        InvalidInputError: a directory with no profile, or no run ``run`` (or
            several of that name).
    """
    if not os.path.isdir(path):
        name = os.path.basename(path)
        return RunPick({shown(name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name): path})
    here = host_files(path)
    if here and run is None:
        return RunPick(here)
    runs = find_runs(path)
    if not runs:
        raise InvalidInputError(
            f"{shown(path)}: no *.xplane.pb here nor under plugins/profile/<run>/ "
            f"(looked {MAX_DEPTH} levels down); pass a TensorBoard logdir the profiler "
            "wrote to, a run directory or a file"
        )
    chosen = max(runs, key=lambda r: r.name) if run is None else _named(runs, run, path)
    others = tuple(r for r in runs if r is not chosen)
    return RunPick(host_files(chosen.folder), chosen, others)


def is_xspace_dir(path: str) -> bool:
    """Whether directory ``path`` is a run directory, a logdir with profiles, or
    a ``plugins/profile`` folder (or such a folder without any profile).

    Only ``path`` itself is looked at; :func:`~tfprof_lite.formats.xspace.read.runs.find_runs`
    also finds the logdirs below it (Keras' ``LOGDIR/train``).
    """
    if not os.path.isdir(path):
        return False
    if host_files(path) or os.path.isdir(os.path.join(path, _PROFILE_DIR)):
        return True
    return os.path.basename(os.path.normpath(path)) == "profile" and bool(find_runs(path))


def is_xspace_file(path: str) -> bool:
    """Whether regular file ``path`` is named ``*.xplane.pb`` or holds an XSpace."""
    if path.endswith(SUFFIX):
        return True
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF + 1)
    except OSError:
        return False
    if len(head) > _SNIFF:  # too large to sniff by a prefix; trust the full parse later
        return False
    from tfprof_lite.proto.kinds import looks_like_xspace  # protobuf: only for unnamed files

    return looks_like_xspace(head)


def pick_host(hosts: dict[str, str], host: str | None, where: str) -> dict[str, str]:
    """``hosts`` cut down to ``host`` (all when None).

    Raises:
        InvalidInputError: no host of that name.
    """
    if host is None:
        return hosts
    host = shown(host)  # the keys are shown names (xspace_runs.host_files)
    if host not in hosts:
        raise InvalidInputError(
            f"{shown(where)}: no host {host!r} in this profile (hosts: {', '.join(sorted(hosts))})"
        )
    return {host: hosts[host]}
