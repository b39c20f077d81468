"""The XSpace format (``*.xplane.pb``, what TensorFlow 2's, Keras' and JAX's
profilers write): read into the profile model and written back out.

Three layers, each importing only those below it (``pyproject.toml``'s
contract *The XSpace package runs one way*):

* :mod:`~tfprof_lite.formats.xspace.wire`: the bytes as flat columns (the
  native decoder or the pure walk), and the ``/host:metadata`` plane's
  programs read at the wire level;
* :mod:`~tfprof_lite.formats.xspace.read`: the columns into a
  :class:`~tfprof_lite.model.profile.ProfileModel`: its steps (found or
  inferred) as spans, the records inside them, the window around them
  (:class:`~tfprof_lite.model.window.EventWindow`), the XLA programs; files,
  run folders and logdirs (``read.load``, ``read.runs``);
* :mod:`~tfprof_lite.formats.xspace.write`: a profile (TF1 RunMetadata steps
  included) as XSpace bytes that XProf reads.

See ``docs/xspace.md`` (reading) and ``docs/xspace_write.md`` (writing).
"""
