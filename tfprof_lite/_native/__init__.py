"""Optional native helpers, compiled when the package is installed.

``_stepdecode`` reads a RunMetadata's step statistics straight from its wire bytes
(see :mod:`tfprof_lite.proto.steps` and ``docs/native.md``). Nothing here is
required: when the extension is not built, every caller falls back to the
pure-Python code, which gives the same results.
"""
