"""FLOPs, transcendentals and bytes accessed of XLA HLO instructions and programs.

A cost model in pure Python over a parsed program (:class:`~tfprof_lite.programs.hlo.Program`)
that follows XLA's ``HloCostAnalysis`` (what ``jax.jit(f).lower(...).compile()
.cost_analysis()`` reports); ``docs/programs/cost_model.md`` lists the rule of
each opcode and how closely the totals agree with XLA's.

Contract:

* :func:`instruction_cost` is the :class:`OpCost` of ONE execution of one
  instruction: a fusion costs its fused computation's flops and the bytes
  XLA's fusion rules charge it (:mod:`~tfprof_lite.programs.cost_fusion`); a
  ``while`` one iteration of its body plus one evaluation of its condition (XLA
  does not multiply by the trip count); a ``call`` or ``async-start`` its called
  computation; a ``conditional`` the most expensive branch, field by field;
  ``reduce``, ``reduce-window``, ``map``, ``scatter`` and ``select-and-scatter``
  their applied computation's cost times its applications.
* :func:`program_cost` returns :class:`ProgramCost`: ``ops`` holds every
  instruction of the entry computation and of every computation it runs
  through ``while``, ``call``, ``conditional`` and ``async-start`` (nested),
  by name (fused instructions and applied reducers are not listed); ``total``
  is the entry computation's instructions summed, which is XLA's per-run total
  (a loop's body counted once).
* Nothing raises on an unknown opcode: it costs its output and operand bytes,
  no flops.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Callable, cast

from tfprof_lite.programs.cost_custom import custom_call_cost
from tfprof_lite.programs.cost_fusion import FusionBytes, fusion_bytes
from tfprof_lite.programs.cost_rules import (
    ELEMENTWISE,
    LOCAL_RULES,
    NO_BYTES,
    TRANSCENDENTAL,
    default_bytes,
    first_array,
    shape_size,
)
from tfprof_lite.programs.hlo import Program, element_count

__all__ = ["OpCost", "ProgramCost", "instruction_cost", "program_cost"]

#: Opcodes whose called computations run as computations of their own.
_RUNS_CALLED = ("while", "call", "conditional", "async-start")


@dataclass(frozen=True)
class OpCost:
    """The cost of one execution of an instruction (or a sum of them)."""

    flops: float = 0.0
    transcendentals: float = 0.0
    bytes_accessed: float = 0.0

    def __add__(self, other: OpCost) -> OpCost:
        """Field-by-field sum."""
        return OpCost(
            self.flops + other.flops,
            self.transcendentals + other.transcendentals,
            self.bytes_accessed + other.bytes_accessed,
        )

    def scaled(self, times: float) -> OpCost:
        """Flops and transcendentals times ``times`` (bytes left out: 0)."""
        return OpCost(self.flops * times, self.transcendentals * times, 0.0)


@dataclass
class ProgramCost:
    """Per-instruction costs of a program and its per-run total (see module doc)."""

    ops: dict[str, OpCost]
    total: OpCost


class _Analyzer:
    """Memoized costs of one program's instructions and computations."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.fusions = FusionBytes(program)
        self._by_instruction: dict[int, OpCost] = {}
        self._by_computation: dict[int, OpCost] = {}
        self._handlers: dict[str, Callable[[Any, list[Any]], OpCost]] = {
            "fusion": self._fusion,
            "reduce": self._reduce,
            "reduce-window": self._reduce_window,
            "map": self._map,
            "scatter": self._scatter,
            "select-and-scatter": self._select_and_scatter,
            "call": self._call,
            "async-start": self._call,
            "while": self._while,
            "conditional": self._conditional,
        }

    def computation(self, computation: Any) -> OpCost:
        """The summed cost of every instruction of ``computation``."""
        key = int(computation.id)
        found = self._by_computation.get(key)
        if found is None:
            flops = transcendentals = moved = 0.0
            for instruction in computation.instructions:
                cost = self.instruction(instruction)
                flops += cost.flops
                transcendentals += cost.transcendentals
                moved += cost.bytes_accessed
            found = self._by_computation[key] = OpCost(flops, transcendentals, moved)
        return found

    def instruction(self, instruction: Any) -> OpCost:
        """The cost of one execution of ``instruction``.

        An instruction too malformed for its rule (an operand or a dimension
        missing) costs its default bytes.
        """
        key = int(instruction.id)
        found = self._by_instruction.get(key)
        if found is None:
            try:
                found = self._compute(instruction)
            except (IndexError, KeyError, ValueError):
                operands = self.program.operands(instruction)
                found = OpCost(0.0, 0.0, default_bytes(instruction, operands))
            self._by_instruction[key] = found
        return found

    def _compute(self, instruction: Any) -> OpCost:
        op = str(instruction.opcode)
        operands = self.program.operands(instruction)
        if op in NO_BYTES:
            return OpCost()
        if op in ELEMENTWISE or op in TRANSCENDENTAL:
            count = float(element_count(instruction.shape))
            # inside a fusion the fusion's own rule counts the bytes
            fused = int(instruction.id) in self.program.fused_instruction_ids
            moved = 0.0 if fused else default_bytes(instruction, operands)
            if op in TRANSCENDENTAL:
                return OpCost(0.0, count, moved)
            return OpCost(count, 0.0, moved)
        handler = self._handlers.get(op)
        if handler is not None:
            return handler(instruction, operands)
        rule = LOCAL_RULES.get(op)
        if rule is None and op == "custom-call":
            rule = custom_call_cost
        if rule is not None:
            return OpCost(*rule(instruction, operands))
        return OpCost(0.0, 0.0, default_bytes(instruction, operands))

    def _applied(self, instruction: Any, index: int = 0) -> OpCost:
        """Cost of one application of the computation ``instruction`` calls."""
        called = self.program.called(instruction)
        return self.computation(called[index]) if len(called) > index else OpCost()

    def _with_default_bytes(self, cost: OpCost, instruction: Any, operands: list[Any]) -> OpCost:
        moved = default_bytes(instruction, operands)
        return OpCost(cost.flops, cost.transcendentals, moved)

    def _reduce(self, instruction: Any, operands: list[Any]) -> OpCost:
        out = element_count(first_array(instruction.shape))
        count = (element_count(operands[0].shape) - out) if operands else 0
        cost = self._applied(instruction).scaled(count)
        return self._with_default_bytes(cost, instruction, operands)

    def _reduce_window(self, instruction: Any, operands: list[Any]) -> OpCost:
        count = reduce_window_applications(instruction)
        cost = self._applied(instruction).scaled(count)
        return self._with_default_bytes(cost, instruction, operands)

    def _map(self, instruction: Any, operands: list[Any]) -> OpCost:
        cost = self._applied(instruction).scaled(element_count(instruction.shape))
        return self._with_default_bytes(cost, instruction, operands)

    def _select_and_scatter(self, instruction: Any, operands: list[Any]) -> OpCost:
        source = element_count(operands[1].shape) if len(operands) > 1 else 0
        window = 1
        for dim in instruction.window.dimensions:
            window *= int(dim.size)
        select = self._applied(instruction, 0).scaled(source * (window - 1))
        scatter = self._applied(instruction, 1).scaled(source)
        return self._with_default_bytes(select + scatter, instruction, operands)

    def _scatter(self, instruction: Any, operands: list[Any]) -> OpCost:
        inputs = (len(operands) - 1) // 2
        updates = operands[inputs + 1 :]
        indices = shape_size(operands[inputs].shape) if inputs < len(operands) else 0.0
        moved = 3 * sum(shape_size(u.shape) for u in updates) + indices
        count = element_count(updates[0].shape) if updates else 0
        cost = self._applied(instruction).scaled(count)
        return OpCost(cost.flops, cost.transcendentals, moved)

    def _call(self, instruction: Any, operands: list[Any]) -> OpCost:
        return self._applied(instruction)

    def _while(self, instruction: Any, operands: list[Any]) -> OpCost:
        total = OpCost()
        for computation in self.program.called(instruction):
            total = total + self.computation(computation)
        return total

    def _conditional(self, instruction: Any, operands: list[Any]) -> OpCost:
        branches = [self.computation(c) for c in self.program.called(instruction)]
        if not branches:
            return OpCost(0.0, 0.0, default_bytes(instruction, operands))
        return OpCost(
            max(b.flops for b in branches),
            max(b.transcendentals for b in branches),
            max(b.bytes_accessed for b in branches),
        )

    def _fusion(self, instruction: Any, operands: list[Any]) -> OpCost:
        computation = self.fusions.fused(instruction)
        if computation is None:
            return OpCost(0.0, 0.0, default_bytes(instruction, operands))
        if str(instruction.fusion_kind) == "kCustom":
            for fused in computation.instructions:
                if fused.opcode in ("gather", "scatter"):
                    return self.instruction(fused)
        inner = self.computation(computation)
        moved = fusion_bytes(self.fusions, instruction)
        return OpCost(inner.flops, inner.transcendentals, moved)


def reduce_window_applications(instruction: Any) -> int:
    """How many times a reduce-window applies its reducer (XLA's count).

    ``window - 1`` per output element, except for a window that spans one whole
    padded dimension (a reduction broadcast back along it, as cumulative sums
    lower to), which XLA counts as one reduction of that dimension plus one
    application per other output element.
    """
    dims = list(instruction.window.dimensions)
    window = 1
    for dim in dims:
        window *= int(dim.size)
    out_shape = first_array(instruction.shape)
    outputs = element_count(out_shape)
    reducing = [d for d in dims if int(d.size) != 1]
    padded = [d for d in dims if int(d.padding_low) != 0 or int(d.padding_high) != 0]
    if len(reducing) == 1 and len(padded) == 1 and int(instruction.shape.element_type) != 13:
        for index, dim in enumerate(dims):
            low, high, size = int(dim.padding_low), int(dim.padding_high), int(dim.size)
            if size != 1 and low != 0 and low == high and size == 2 * low + 1:
                span = int(out_shape.dimensions[index])
                if low == span - 1:
                    return outputs // span + (span - 1)
                break
    return (window - 1) * outputs


_ANALYZERS: weakref.WeakKeyDictionary[Program, _Analyzer] = weakref.WeakKeyDictionary()


def _analyzer(program: Program) -> _Analyzer:
    """The program's memoized analyzer (it holds the program weakly: no leak)."""
    found = _ANALYZERS.get(program)
    if found is None:
        found = _ANALYZERS[program] = _Analyzer(cast(Program, weakref.proxy(program)))
    return found


def instruction_cost(program: Program, instruction: Any) -> OpCost:
    """The cost of one execution of ``instruction`` of ``program`` (module doc)."""
    return _analyzer(program).instruction(instruction)


def _running_computations(program: Program) -> list[Any]:
    """The entry and every computation it runs through while/call/conditional/async."""
    order = [program.entry]
    seen = {int(program.entry.id)}
    for computation in order:
        for instruction in computation.instructions:
            if instruction.opcode not in _RUNS_CALLED:
                continue
            for called in program.called(instruction):
                if int(called.id) not in seen:
                    seen.add(int(called.id))
                    order.append(called)
    return order


def program_cost(program: Program) -> ProgramCost:
    """Every running instruction's cost and the per-run total (module doc)."""
    analyzer = _analyzer(program)
    ops: dict[str, OpCost] = {}
    for computation in _running_computations(program):
        for instruction in computation.instructions:
            ops[instruction.name] = analyzer.instruction(instruction)
    return ProgramCost(ops=ops, total=analyzer.computation(program.entry))
