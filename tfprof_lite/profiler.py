"""The Profiler facade: the drop-in for ``tf.compat.v1.profiler.Profiler``.

It only wires pieces together: inputs go into a
:class:`~tfprof_lite.model.profile.ProfileModel` through :mod:`tfprof_lite.ingest`
(a ``tf.Graph`` is read by :mod:`tfprof_lite.capture`, the only part that imports
TensorFlow), queries run through the views and are written by
:mod:`tfprof_lite.outputs`, advice comes from :mod:`tfprof_lite.advisor`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.ingest import Ingest
from tfprof_lite.model.profile import ProfileModel

if TYPE_CHECKING:
    from tfprof_lite.model.flops import FlopConventions
    from tfprof_lite.options.options import Options
    from tfprof_lite.views import View

# The views, outputs, options and protobuf messages are imported by the methods
# that use them: a profiler loaded from an XSpace for one analysis needs none.

__all__ = ["Profiler"]


def _options(options: Any) -> Options:
    from tfprof_lite.options.options import Options

    if isinstance(options, Options):
        return options
    return Options.from_dict(options)


class Profiler:
    """Collects profiles of several steps and answers tfprof queries on them.

    Args:
        graph: a ``tf.Graph``, a GraphDef (ours or TensorFlow's, or its serialized
            bytes), or None for TensorFlow's default graph when TensorFlow is
            imported and not executing eagerly (otherwise the nodes come from the
            RunMetadata alone).
        op_log: an OpLogProto (message or bytes) with extra types, FLOPs, traces.
        flops: ``"tf"`` (default: TensorFlow's FLOPs), ``"corrected"`` or a
            ``FlopConventions``: FLOPs from ``tfprof_lite.capture.flops``, re-applied
            on every ``add_step`` (needs TensorFlow; see ``docs/flops.md``).
    """

    _ingest: Ingest
    _views: dict[str, View]

    def __init__(
        self, graph: Any = None, op_log: Any = None, *, flops: str | FlopConventions = "tf"
    ) -> None:
        self._ingest = Ingest.for_profiler(graph, op_log, flops)
        self._views = {}

    @property
    def model(self) -> ProfileModel:
        """The profile store behind this profiler."""
        return self._ingest.model

    @property
    def graph(self) -> Any:
        """The ``tf.Graph`` this profiler follows across steps, or None."""
        source = self._ingest.source
        return None if source is None else source.graph

    @property
    def coverage(self) -> float:
        """Share of the graph's nodes seen in the steps added so far (0 before any)."""
        return self._ingest.coverage

    def follow_graph(self, graph: Any) -> None:
        """Take the nodes and op logs of later steps from ``graph`` (a ``tf.Graph``)
        when it is not the graph followed so far."""
        self._ingest.follow(graph)

    def add_step(self, step: int, run_meta: Any) -> None:
        """Add one step's RunMetadata (our message, TensorFlow's, or bytes).

        Raises:
            InvalidInputError: ``run_meta`` is empty, unparsable or not a RunMetadata.
        """
        self._ingest.add_step(step, run_meta)

    def _view(self, cmd: str) -> View:
        view = self._views.get(cmd)
        if view is None:
            from tfprof_lite.views import make_view

            view = make_view(cmd, self.model)
            self._views[cmd] = view
        return view

    def _profile(self, cmd: str, options: Any) -> Any:
        from tfprof_lite.outputs.answer import answer_query

        return answer_query(self.model, self._view(cmd), _options(options))

    def profile_name_scope(self, options: Any) -> Any:
        """Scope view; returns a GraphNodeProto."""
        return self._profile("scope", options)

    def profile_graph(self, options: Any) -> Any:
        """Graph view; returns a GraphNodeProto."""
        return self._profile("graph", options)

    def profile_operations(self, options: Any) -> Any:
        """Op view; returns a MultiGraphNodeProto."""
        return self._profile("op", options)

    def profile_python(self, options: Any) -> Any:
        """Code view; returns a MultiGraphNodeProto."""
        return self._profile("code", options)

    def advise(self, options: Any) -> Any:
        """Run the advisor's checkers (``options``: checker name -> options dict).

        Prints each checker's reports and returns an AdviceProto.
        """
        from tfprof_lite.advisor import run_advisor
        from tfprof_lite.base.writing import write_stdout
        from tfprof_lite.views import VIEWS

        for cmd in VIEWS:  # tfprof builds every view before advising
            self.model.view_extent(cmd)
        result = run_advisor(self.model, options)
        if result.text:
            write_stdout(result.text)
        return result.advice

    def write_steps_trace(
        self, path: str | os.PathLike[str], steps: list[int] | None = None
    ) -> int:
        """Write every (or the given) step into one Chrome trace; ``.gz`` compresses.

        Returns the number of events written (see ``docs/outputs/steps_trace.md``).
        """
        from tfprof_lite.outputs.steps_trace import write_steps_trace

        return write_steps_trace(self.model, path, steps)

    def write_xspace(
        self, logdir: str | os.PathLike[str], run: str | None = None, host: str | None = None
    ) -> list[str]:
        """Write the profile as an XSpace that XProf / TensorBoard's Profile tab opens:
        ``LOGDIR/plugins/profile/<run>/<host>.xplane.pb`` (one file per task for a
        cluster profile), each written atomically. ``run`` defaults to the current
        time (``YYYY_MM_DD_HH_MM_SS``), ``host`` to ``localhost``. Returns the paths
        written (see ``docs/xspace_write.md``).
        """
        from tfprof_lite.base.writing import write_atomic
        from tfprof_lite.formats.xspace.write.export import run_name, xspace_files

        cluster = getattr(self, "cluster", None)
        tasks = list(cluster.tasks) if cluster is not None else None
        files = xspace_files(self.model, tasks, host)
        run_dir = os.path.join(os.fspath(logdir), "plugins", "profile", run or run_name())
        os.makedirs(run_dir, exist_ok=True)
        written = []
        for name, data in files.items():
            path = os.path.join(run_dir, name)
            write_atomic(path, data)
            written.append(path)
        return written

    def serialize_to_string(self) -> bytes:
        """The profile as ProfileProto bytes (TensorFlow's tfprof can load them)."""
        from tfprof_lite.model import profile_io

        data: bytes = profile_io.encode_bytes(self.model)
        return data

    def _write_profile(self, filename: str | os.PathLike[str]) -> None:
        from tfprof_lite.base.writing import write_atomic

        write_atomic(filename, self.serialize_to_string())

    @classmethod
    def load(
        cls,
        source: str | os.PathLike[str] | bytes | bytearray,
        *,
        max_input_size: int | str | None = None,
        run: str | None = None,
        host: str | None = None,
    ) -> Profiler:
        """A profiler on a saved profile or on a profiler XSpace.

        ``source`` is a ``profile_<step>`` file (ProfileProto), an XSpace
        (``*.xplane.pb``, written by TensorFlow 2, Keras or JAX; told apart by
        content), a run directory (``plugins/profile/<run>/``), a TensorBoard
        logdir or a folder with logdirs a few levels below it (Keras'
        ``LOGDIR/train``; the newest run, or ``run``), or the bytes of one file. The
        steps of an XSpace are found as ``docs/xspace.md`` says;
        ``prof.model.steps_source`` says how.

        Args:
            source: the file or directory, or the bytes of a file.
            max_input_size: the largest file accepted, in bytes or as ``"8GiB"``;
                default ``$TFPROF_LITE_MAX_INPUT_SIZE``, else 2 GiB.
            run: in a logdir, the run directory to read (default: the newest).
            host: the host whose XSpace to read when the run has several.

        Raises:
            InvalidInputError: the file is missing, not a regular file, over the
                size limit, empty, a Chrome trace (JSON), neither a ProfileProto
                nor an XSpace; a directory without profiles; several hosts and
                no ``host``.
            InvalidOptionError: ``max_input_size`` is not a size.
        """
        from tfprof_lite.formats.xspace.read import load as xspace_load

        what = "profile"
        if isinstance(source, (str, os.PathLike)):
            saved = _saved_path(os.fspath(source))
            if saved is None:
                return cls._from_model(_xspace_model(os.fspath(source), max_input_size, run, host))
            what = saved
            from tfprof_lite.base.reading import read_input

            source = read_input(what, "a saved profile", max_input_size)
            if not source:
                raise InvalidInputError(f"{what}: the file is empty, expected a ProfileProto")
        # Protobuf and the saved-profile reader only past the XSpace paths above.
        from tfprof_lite.model import profile_io
        from tfprof_lite.proto import messages as pb
        from tfprof_lite.proto.codec import parse, wire_bytes

        raw = wire_bytes(pb.ProfileProto, source, what)
        if raw is None:
            parse(pb.ProfileProto, source, what)  # raises: not bytes nor a message
            raise InvalidInputError(f"{what}: expected a ProfileProto or its bytes")
        try:
            prof = cls._from_model(ProfileModel())
            profile_io.load_bytes(raw, prof.model, lambda data: parse(pb.ProfileProto, data, what))
            if not len(prof.model):
                raise InvalidInputError(f"{what}: the profile has no nodes; is it a ProfileProto?")
        except InvalidInputError:
            from tfprof_lite.proto.kinds import looks_like_xspace

            if not looks_like_xspace(raw):
                raise
            return cls._from_model(xspace_load.model_from_bytes(raw, what))
        return prof

    @classmethod
    def _from_model(cls, model: ProfileModel) -> Profiler:
        """A profiler on ``model`` as it is."""
        prof = cls.__new__(cls)
        prof._ingest = Ingest()
        prof._ingest.model = model
        prof._views = {}
        return prof


def _saved_path(path: str) -> str | None:
    """The file to read as a saved profile for ``path`` (a directory of
    ``profile_<step>`` files: the newest), or None when ``path`` is read as an
    XSpace; what the input table (:mod:`tfprof_lite.formats.resolve`) says it
    holds decides.

    Raises:
        InvalidInputError: a Chrome trace (naming the XSpace to pass instead), or
            RunMetadata captures (which :func:`tfprof_lite.cluster.merge` reads).
    """
    from tfprof_lite.formats import resolve
    from tfprof_lite.formats.chrome_trace import chrome_trace_error

    if not os.path.exists(path):
        return None if path.endswith(resolve.XSPACE_SUFFIX) else path
    fmt = resolve.identify(path)
    if fmt.name in resolve.XSPACE_FORMATS:
        return None
    trace = chrome_trace_error(path) if fmt.name == "chrome-trace" else None
    if trace is not None:  # JAX's <host>.trace.json.gz, a timeline: say what to pass
        raise trace
    if fmt.name == "saved-profiles":
        found = resolve.saved_profiles(path)
        return found[max(found)]
    if fmt.name != "tf-message":
        raise resolve.refusal(
            path, fmt, "Profiler.load", "merge it with tfprof_lite.cluster.merge([path])"
        )
    return path


def _xspace_model(
    path: str, max_input_size: int | str | None, run: str | None, host: str | None
) -> ProfileModel:
    """The model of one host's XSpace under ``path`` (a file, run directory or logdir)."""
    from tfprof_lite.formats.xspace.read import load as xspace_load

    hosts = xspace_load.pick_host(xspace_load.xspace_hosts(path, run), host, path)
    if len(hosts) > 1:
        raise InvalidInputError(
            f"{path}: profiles of several hosts ({', '.join(hosts)}); pass host=NAME, "
            "or merge them with tfprof_lite.cluster.merge()"
        )
    (file,) = hosts.values()
    return xspace_load.load_model(file, max_input_size)
