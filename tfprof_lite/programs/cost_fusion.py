"""Bytes accessed by a fusion, by XLA's ``HloCostAnalysis`` fusion rules.

Contract: :func:`fusion_bytes` is what one run of a fusion instruction reads
and writes in memory; what its fused instructions pass each other stays on
chip and is not counted. It is the sum of

* its outputs: every array of the fusion's shape; an output produced by a
  ``dynamic-update-slice`` (the fused root, or the root tuple's element) writes
  only the update (the rest of the buffer is aliased in place);
* its large constants: every fused ``constant`` of more than one element;
* each operand as the fused computation reads it (:func:`parameter_read_bytes`):
  a parameter read through ``slice``\\ s costs the slices' bytes, through a
  ``dynamic-slice`` (as the sliced operand) the slice's bytes, as the in-place
  buffer of a ``dynamic-update-slice`` nothing; every ``broadcast`` or
  ``reshape`` of it reads it again; all other users share one read of it. A
  parameter feeding a nested fusion is read as that fusion's parameter is read
  (or, when it feeds the nested root directly, as the nested fusion's users read
  the nested fusion). A tuple parameter is read element by element through its
  ``get-tuple-element``\\ s.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from tfprof_lite.programs.cost_rules import shape_size
from tfprof_lite.programs.hlo import Program, element_count

__all__ = ["FusionBytes", "fusion_bytes"]

_TUPLE = 13


def _operand_indices(user: Any, instruction: Any) -> list[int]:
    ident = int(instruction.id)
    return [i for i, op in enumerate(user.operand_ids) if int(op) == ident]


class FusionBytes:
    """The fusion byte rules over one program (users indexed per computation)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._users = lru_cache(maxsize=None)(self._users_of)
        self._parameters = lru_cache(maxsize=None)(self._parameters_of)

    def _users_of(self, computation_id: int) -> dict[int, list[Any]]:
        """Instruction id -> its distinct users, in the computation's order."""
        users: dict[int, list[Any]] = {}
        computation = self.program.computations[computation_id]
        for instruction in computation.instructions:
            for op in dict.fromkeys(int(o) for o in instruction.operand_ids):
                users.setdefault(op, []).append(instruction)
        return users

    def users(self, instruction: Any) -> list[Any]:
        """The distinct users of ``instruction`` inside its computation."""
        computation = self.program.computation_of.get(int(instruction.id))
        if computation is None:
            return []
        return self._users(int(computation.id)).get(int(instruction.id), [])

    def fused(self, fusion: Any) -> Any:
        """The fused computation of ``fusion`` (``None`` when the module lacks it)."""
        called = self.program.called(fusion)
        return called[0] if called else None

    def parameter(self, computation: Any, number: int) -> Any:
        """Parameter ``number`` of ``computation`` (``None`` when it has none)."""
        return self._parameters(int(computation.id)).get(number)

    def _parameters_of(self, computation_id: int) -> dict[int, Any]:
        """Parameter number -> parameter instruction, of one computation."""
        computation = self.program.computations[computation_id]
        return {
            int(i.parameter_number): i for i in computation.instructions if i.opcode == "parameter"
        }

    def read_bytes(self, hlo: Any) -> float:
        """Bytes the fused computation reads of ``hlo`` (a parameter or its element)."""
        size = 0.0
        seen = [False]
        for user in self.users(hlo):
            op = user.opcode
            if op == "fusion":
                size += self._nested_read(hlo, user)
            elif op == "slice":
                size += shape_size(user.shape)
            elif op == "dynamic-slice":
                size += _dynamic_slice_read(hlo, user, seen)
            elif op == "dynamic-update-slice":
                size += _update_slice_read(hlo, user, seen)
            elif op in ("broadcast", "reshape"):
                size += shape_size(hlo.shape)
            elif not seen[0]:
                seen[0] = True
                size += shape_size(hlo.shape)
        return size

    def _nested_read(self, hlo: Any, nested: Any) -> float:
        """Bytes read of ``hlo`` through the nested fusion ``nested`` that uses it."""
        computation = self.fused(nested)
        if computation is None:
            return 0.0
        root = self.program.root(computation)
        size = 0.0
        for index in _operand_indices(nested, hlo):
            parameter = self.parameter(computation, index)
            if parameter is None:
                continue
            simple = not root.operand_ids or int(parameter.id) == int(root.operand_ids[0])
            seen = [False]
            for outer in self.users(nested):
                if simple and outer.opcode == "slice":
                    size += shape_size(outer.shape)
                elif simple and outer.opcode == "dynamic-slice":
                    size += _dynamic_slice_read(nested, outer, seen)
                elif simple and outer.opcode == "dynamic-update-slice":
                    size += _update_slice_read(nested, outer, seen)
                elif not seen[0]:
                    seen[0] = True
                    size += self.read_bytes(parameter)
        return size

    def operand_bytes(self, computation: Any, number: int) -> float:
        """Bytes the fusion reads of its operand ``number``."""
        parameter = self.parameter(computation, number)
        if parameter is None:
            return 0.0
        if int(parameter.shape.element_type) != _TUPLE:
            return self.read_bytes(parameter)
        total = 0.0
        for path in _leaf_paths(parameter.shape):
            node = parameter
            for index in path:
                node = next(
                    (
                        u
                        for u in self.users(node)
                        if u.opcode == "get-tuple-element" and int(u.tuple_index) == index
                    ),
                    node,
                )
            total += self.read_bytes(node)
        return total

    def output_bytes(self, fusion: Any, computation: Any) -> float:
        """Bytes the fusion writes (see the module docstring)."""
        root = self.program.root(computation)
        shape = fusion.shape
        if int(shape.element_type) != _TUPLE:
            return self._written(root, shape)
        total = 0.0
        table = self.program.instructions
        for index, element in enumerate(shape.tuple_shapes):
            producer = root
            if root.opcode == "tuple" and index < len(root.operand_ids):
                producer = table.get(int(root.operand_ids[index]), root)
            total += self._written(producer, element)
        return total

    def _written(self, producer: Any, shape: Any) -> float:
        """Bytes of the arrays in ``shape`` as ``producer`` writes them."""
        if int(shape.element_type) == _TUPLE:
            return sum(_arrays_bytes(s) for s in shape.tuple_shapes)
        if producer.opcode == "dynamic-update-slice" and len(producer.operand_ids) > 1:
            update = self.program.instructions.get(int(producer.operand_ids[1]))
            if update is not None:
                return shape_size(update.shape)
        return shape_size(shape)


def _leaf_paths(shape: Any, prefix: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    """The index paths of the non-tuple elements of ``shape``."""
    if int(shape.element_type) != _TUPLE:
        return [prefix]
    paths: list[tuple[int, ...]] = []
    for index, element in enumerate(shape.tuple_shapes):
        paths.extend(_leaf_paths(element, (*prefix, index)))
    return paths


def _arrays_bytes(shape: Any) -> float:
    if int(shape.element_type) == _TUPLE:
        return sum(_arrays_bytes(s) for s in shape.tuple_shapes)
    return shape_size(shape) if int(shape.element_type) not in (14, 17) else 0.0


def _dynamic_slice_read(hlo: Any, user: Any, seen: list[bool]) -> float:
    if user.operand_ids and int(user.operand_ids[0]) == int(hlo.id):
        return shape_size(user.shape)
    if not seen[0]:
        seen[0] = True
        return shape_size(hlo.shape)
    return 0.0


def _update_slice_read(hlo: Any, user: Any, seen: list[bool]) -> float:
    in_place = user.operand_ids and int(user.operand_ids[0]) == int(hlo.id)
    if not in_place and not seen[0]:
        seen[0] = True
        return shape_size(hlo.shape)
    return 0.0


def fusion_bytes(rules: FusionBytes, fusion: Any) -> float:
    """Bytes one run of ``fusion`` reads and writes (see the module docstring)."""
    computation = rules.fused(fusion)
    if computation is None:
        return 0.0
    total = rules.output_bytes(fusion, computation)
    for instruction in computation.instructions:
        if instruction.opcode == "constant" and element_count(instruction.shape) > 1:
            total += shape_size(instruction.shape)
    for number in range(len(fusion.operand_ids)):
        total += rules.operand_bytes(computation, number)
    return total
