"""XLA program tools: the compiled programs of a profile, their costs and memory.

Over the ``HloProto`` of each compiled program that an XSpace carries (and the
time its instructions ran, :class:`tfprof_lite.model.xla_programs.XlaPrograms`):

* :mod:`~tfprof_lite.programs.hlo`: a parsed program's computations and
  instructions by id, shapes as text and in bytes;
* :mod:`~tfprof_lite.programs.cost`: FLOPs and bytes accessed per instruction,
  by XLA's ``HloCostAnalysis`` conventions;
* :mod:`~tfprof_lite.programs.peaks`: a device's peak FLOP rate and memory
  bandwidth;
* :mod:`~tfprof_lite.programs.op_profile`: the op profile (time, FLOPs, bytes,
  roofline bound and headroom per instruction), and
  :mod:`~tfprof_lite.programs.roofline` its roofline chart;
* :mod:`~tfprof_lite.programs.buffers`: the memory viewer (a program's buffer
  assignment, its heap over program order and what is live at the peak).

Nothing here imports TensorFlow or reads files; the command line and the report
call these with a loaded profile.
"""
