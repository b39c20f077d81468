"""The external input formats: one package per format, one table of them.

:mod:`tfprof_lite.formats.resolve` says what a path holds (the table every
loader reads); each format's package holds its schema, decoder, conversion
into the profile model and writer (``docs/ARCHITECTURE.md``, "A new input
format").
"""
