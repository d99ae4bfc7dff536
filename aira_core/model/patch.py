"""Applying AMIR patches: pure, validated, all or nothing.

``apply_patch(document, patch, signatures)`` returns a new document or raises
:class:`PatchRejected` listing every problem with a stable code and a JSON pointer; the
input document is never modified. Structural problems of one op (duplicate id, unknown
entity, removing something still referenced) point at ``/ops/<i>``; problems of the result
(dangling reference, cycle, type or unit mismatch against the operation's signature,
out-of-range value) point into the resulting document.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

from pydantic import ValidationError

from aira_core.contracts.amir import (
    AMIR_TYPE_MISMATCH,
    BASE_UNIT,
    BLOCK_BY_NAME,
    BLOCKS,
    JSON,
    SELECTION,
    SHAPE,
    UNITS,
    AmirDocument,
    Assertion,
    AssertionRemove,
    Block,
    Body,
    BodyRemove,
    BodySetMaterial,
    BodySetTip,
    InputValue,
    LabelSet,
    Node,
    NodeAdd,
    NodeInput,
    NodeRemove,
    NodeSetInputs,
    Parameter,
    ParameterRemove,
    ParameterSetValue,
    ParamInput,
    ParamType,
    Patch,
    PatchOp,
    SemanticInput,
    param_fits,
    to_base,
)
from aira_core.diagnostics import AiraError, Diagnostic, FindingCap, json_pointer
from aira_core.model.operations import InputSpec, OperationSignature

PATCH_INVALID = "PATCH_INVALID"
PATCH_DUPLICATE_ID = "PATCH_DUPLICATE_ID"
PATCH_ENTITY_UNKNOWN = "PATCH_ENTITY_UNKNOWN"
PATCH_STILL_REFERENCED = "PATCH_STILL_REFERENCED"
AMIR_DANGLING_REFERENCE = "AMIR_DANGLING_REFERENCE"
AMIR_CYCLE = "AMIR_CYCLE"
AMIR_OPERATION_UNKNOWN = "AMIR_OPERATION_UNKNOWN"
AMIR_INPUT_MISSING = "AMIR_INPUT_MISSING"
AMIR_INPUT_UNKNOWN = "AMIR_INPUT_UNKNOWN"
PARAMETER_OUT_OF_RANGE = "PARAMETER_OUT_OF_RANGE"

Entity = Parameter | Node | Body | Assertion
# A patch op is "<entity>.<verb>" ("node.add", "body.setTip"); "label.set" names no block.
_BLOCK_OF_OP = {b.singular: b for b in BLOCK_BY_NAME.values()}


class PatchRejected(AiraError):
    """A patch that was not applied; ``diagnostics`` lists every problem found."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        first = diagnostics[0]
        more = f" (and {len(diagnostics) - 1} more)" if len(diagnostics) > 1 else ""
        super().__init__(first.code, first.message + more, pointer=first.pointer)
        self.diagnostics = list(diagnostics)


def _invalid(exc: ValidationError, what: str) -> PatchRejected:
    """A patch or document that failed its model, each error a ``PATCH_INVALID`` finding:
    as many as a :class:`FindingCap` lists (a patch of 50,000 bad ops), the rest counted."""
    cap = FindingCap()
    return PatchRejected(
        [
            _problem(
                PATCH_INVALID,
                f"{what}: {e['msg']}",
                *(p for p in e["loc"] if not str(p).startswith("function")),
            )
            for e in exc.errors(include_url=False, include_input=False, include_context=False)
            if cap.keep(PATCH_INVALID)
        ]
        + cap.summary()
    )


def _problem(code: str, message: str, *pointer: str | int) -> Diagnostic:
    return Diagnostic(code=code, message=message, pointer=json_pointer(list(pointer)) or None)


_Pending = tuple[str, str, tuple[Any, ...]]


def _later(code: str, message: str, *pointer: Any) -> _Pending:
    """A problem :func:`validate_document` makes a Diagnostic only if its cap lists it
    (building one redacts its message, which costs)."""
    return code, message, pointer


# -- references ----------------------------------------------------------------------------


def _input_refs(inputs: Mapping[str, InputValue]) -> Iterator[tuple[str, str, str]]:
    """(input name, referenced id, what it must be) for every reference among inputs."""
    for name, value in inputs.items():
        if isinstance(value, ParamInput):
            yield name, value.param, "parameters"
        elif isinstance(value, NodeInput) or (
            isinstance(value, SemanticInput) and value.node is not None
        ):
            yield name, value.node, "nodes"
        elif isinstance(value, SemanticInput):
            yield name, str(value.body), "bodies"


def references(entity: Entity) -> Iterator[tuple[str, str]]:
    """(referenced id, block it must be in) for every reference an entity holds."""
    if isinstance(entity, Node):
        for _, ref, block in _input_refs(entity.inputs):
            yield ref, block
    elif isinstance(entity, Body):
        yield entity.tip, "nodes"
    elif isinstance(entity, Assertion):
        yield entity.target, "bodies"
        for _, ref, block in _input_refs(entity.args):
            yield ref, block


class _Draft:
    """A mutable copy of the document's four blocks, keyed by id in document order."""

    def __init__(self, doc: AmirDocument) -> None:
        self.blocks: dict[str, dict[str, Any]] = {
            name: {e.id: e for e in getattr(doc, name)} for name in BLOCKS
        }

    def find(self, entity_id: str) -> tuple[str, Any] | None:
        for name, block in self.blocks.items():
            if entity_id in block:
                return name, block[entity_id]
        return None

    def referrers(self, entity_id: str) -> list[str]:
        return [
            e.id
            for block in self.blocks.values()
            for e in block.values()
            if any(ref == entity_id for ref, _ in references(e))
        ]

    def document(self) -> AmirDocument:
        return AmirDocument.model_construct(
            **{n: tuple(b.values()) for n, b in self.blocks.items()}
        )


def added_entity(op: PatchOp) -> tuple[Block, Entity] | None:
    """The block and the entity an ``*.add`` op appends to it; None for any other op."""
    kind, _, verb = op.op.partition(".")
    block = _BLOCK_OF_OP.get(kind)
    if block is None or verb != "add":
        return None
    return block, getattr(op, block.singular)


def _apply_op(draft: _Draft, i: int, op: PatchOp) -> None:
    def fail(code: str, message: str) -> NoReturn:
        raise PatchRejected([_problem(code, f"op {i} ({op.op}): {message}", "ops", i)])

    added = added_entity(op)
    if added is not None:
        into, entity = added
        if draft.find(entity.id) is not None:
            fail(PATCH_DUPLICATE_ID, f"id {entity.id!r} already exists")
        draft.blocks[into.name][entity.id] = entity
        return

    found = draft.find(op.id)
    expected = _BLOCK_OF_OP.get(op.op.partition(".")[0])
    if found is None or (expected is not None and found[0] != expected.name):
        what = expected.singular if expected else "entity"
        fail(PATCH_ENTITY_UNKNOWN, f"no {what} has id {op.id!r}")
    block, entity = found

    if isinstance(op, ParameterRemove | NodeRemove | BodyRemove | AssertionRemove):
        users = draft.referrers(op.id)
        if users:
            fail(
                PATCH_STILL_REFERENCED,
                f"{op.id!r} is still referenced by {', '.join(sorted(users))}",
            )
        del draft.blocks[block][op.id]
    elif isinstance(op, ParameterSetValue):
        value = op.value
        if op.unit is not None:
            if entity.type not in BASE_UNIT:
                fail(AMIR_TYPE_MISMATCH, f"a {entity.type.value} parameter takes no unit")
            if not isinstance(value, int | float) or isinstance(value, bool):
                fail(AMIR_TYPE_MISMATCH, f"{value!r} is not a {entity.type.value}")
            try:
                base = to_base(float(value), op.unit, entity.type)
            except AiraError as exc:
                fail(exc.code, exc.diagnostic.message)
            value = base / UNITS[entity.type][entity.unit or BASE_UNIT[entity.type]]
            if not math.isfinite(value):
                fail(PARAMETER_OUT_OF_RANGE, f"{op.value!r} {op.unit} is too large a value")
        draft.blocks[block][op.id] = entity.model_copy(update={"value": value})
    elif isinstance(op, NodeSetInputs):
        draft.blocks[block][op.id] = entity.model_copy(update={"inputs": op.inputs})
    elif isinstance(op, BodySetMaterial):
        draft.blocks[block][op.id] = entity.model_copy(update={"material": op.material})
    elif isinstance(op, BodySetTip):
        draft.blocks[block][op.id] = entity.model_copy(update={"tip": op.tip})
    elif isinstance(op, LabelSet):
        if op.label is None and isinstance(entity, Parameter | Body):
            fail(PATCH_INVALID, f"a {BLOCK_BY_NAME[block].singular} must keep a label")
        try:  # validated, not copied: an empty label is not a label
            relabelled = type(entity).model_validate(
                {**entity.model_dump(by_alias=False), "label": op.label}
            )
        except ValidationError as exc:
            fail(PATCH_INVALID, f"label {op.label!r}: {exc.errors(include_url=False)[0]['msg']}")
        draft.blocks[block][op.id] = relabelled


# -- validation of a whole document -----------------------------------------------------------


def _check_value(
    spec_type: str, value: Any, unit: str | None, where: tuple[Any, ...], out: list[_Pending]
) -> float | None:
    """Type-check a scalar for an input of ``spec_type``; returns it in base units if numeric."""
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    ok = {
        ParamType.LENGTH.value: is_number,
        ParamType.ANGLE.value: is_number,
        ParamType.REAL.value: is_number,
        ParamType.COUNT.value: isinstance(value, int) and not isinstance(value, bool),
        ParamType.BOOL.value: isinstance(value, bool),
        ParamType.STRING.value: isinstance(value, str),
    }.get(spec_type, True)
    if not ok:
        out.append(_later(AMIR_TYPE_MISMATCH, f"{value!r} is not a {spec_type}", *where))
        return None
    if not is_number:
        if unit is not None:  # a Bool or a String has no unit to convert from
            out.append(_later(AMIR_TYPE_MISMATCH, f"a {spec_type} takes no unit", *where))
        return None
    if spec_type in (ParamType.LENGTH.value, ParamType.ANGLE.value):
        try:
            return to_base(float(value), unit, ParamType(spec_type))
        except AiraError as exc:
            out.append(_later(exc.code, exc.diagnostic.message, *where))
            return None
    if unit is not None:
        out.append(_later(AMIR_TYPE_MISMATCH, f"a {spec_type} takes no unit", *where))
        return None
    return float(value)


def _check_inputs(
    inputs: Mapping[str, InputValue],
    signature: OperationSignature,
    params: Mapping[str, Parameter],
    where: tuple[Any, ...],
    out: list[_Pending],
) -> None:
    for name in sorted(set(signature.inputs) - set(inputs)):
        if signature.inputs[name].required:
            out.append(
                _later(AMIR_INPUT_MISSING, f"{signature.ref} requires input {name!r}", *where)
            )
    for name, value in inputs.items():
        spec: InputSpec | None = signature.inputs.get(name)
        at = (*where, name)
        if spec is None:
            out.append(
                _later(
                    AMIR_INPUT_UNKNOWN,
                    f"{signature.ref} has no input {name!r}; "
                    f"inputs: {', '.join(sorted(signature.inputs))}",
                    *at,
                )
            )
            continue
        if spec.type == SHAPE:
            if not isinstance(value, NodeInput):
                out.append(
                    _later(AMIR_TYPE_MISMATCH, f"input {name!r} takes a node's shape {{node}}", *at)
                )
            continue
        if spec.type == SELECTION:
            if not isinstance(value, SemanticInput):
                out.append(
                    _later(
                        AMIR_TYPE_MISMATCH,
                        f"input {name!r} takes a selection {{body, select}}",
                        *at,
                    )
                )
            continue
        if isinstance(value, NodeInput | SemanticInput):
            if spec.type != JSON:
                out.append(
                    _later(AMIR_TYPE_MISMATCH, f"input {name!r} takes a {spec.type} value", *at)
                )
            continue
        if spec.type == JSON:
            continue
        if isinstance(value, ParamInput):
            param = params.get(value.param)
            if param is None:
                continue  # reported as a dangling reference
            why = param_fits(param.type.value, spec.type)
            if why is not None:
                out.append(
                    _later(
                        why,
                        f"parameter {param.id!r} is a {param.type.value}; "
                        f"input {name!r} takes a {spec.type}",
                        *at,
                    )
                )
                continue
            base = _check_value(spec.type, param.value, param.unit, at, out)
        else:
            base = _check_value(spec.type, value.value, value.unit, at, out)
        if base is not None:
            why = spec.out_of_range(base)
            if why is not None:
                out.append(
                    _later(
                        PARAMETER_OUT_OF_RANGE, f"input {name!r} of {signature.ref} is {why}", *at
                    )
                )


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """A cycle of ``graph`` (each key to the keys it depends on), as a path of keys that
    starts and ends at the same key, or None. Dependencies that are not keys are ignored.

    Iterative depth-first search: a chain of any length is no deeper for the Python stack.
    """
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for root in graph:
        if root in state:
            continue
        state[root] = 1
        path = [root]
        stack = [iter(graph[root])]
        while stack:
            ref = next(stack[-1], None)
            if ref is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(ref) == 1:
                return [*path[path.index(ref) :], ref]
            elif ref not in state and ref in graph:
                state[ref] = 1
                path.append(ref)
                stack.append(iter(graph[ref]))
    return None


def _node_graph(nodes: Mapping[str, Node]) -> dict[str, list[str]]:
    """Each node to the nodes it takes as inputs."""
    return {
        nid: [ref for _, ref, block in _input_refs(node.inputs) if block == "nodes"]
        for nid, node in nodes.items()
    }


def validate_document(
    doc: AmirDocument, signatures: Mapping[str, OperationSignature] | None = None
) -> list[Diagnostic]:
    """Every problem of a document: references, cycles, parameter ranges and, when
    ``signatures`` are given, each node's inputs against its operation's signature."""
    out: list[_Pending] = []
    index = {name: {e.id: e for e in getattr(doc, name)} for name in BLOCKS}
    for block in BLOCKS:
        for i, entity in enumerate(getattr(doc, block)):
            for ref, target in references(entity):
                if ref not in index[target]:
                    out.append(
                        _later(
                            AMIR_DANGLING_REFERENCE,
                            f"{entity.id!r} refers to {ref!r}, which is not among the {target}",
                            block,
                            i,
                        )
                    )
    for i, p in enumerate(doc.parameters):
        base = _check_value(p.type.value, p.value, p.unit, ("parameters", i, "value"), out)
        value = None if base is None else float(p.value)  # min/max are in the param's unit
        if value is not None and (
            (p.min is not None and value < p.min) or (p.max is not None and value > p.max)
        ):
            out.append(
                _later(
                    PARAMETER_OUT_OF_RANGE,
                    f"parameter {p.id!r} = {p.value} is outside "
                    f"[{p.min if p.min is not None else '-inf'}, "
                    f"{p.max if p.max is not None else 'inf'}]",
                    "parameters",
                    i,
                    "value",
                )
            )
    cycle = find_cycle(_node_graph(index["nodes"]))
    if cycle:
        out.append(
            _later(
                AMIR_CYCLE, "nodes depend on each other in a cycle: " + " -> ".join(cycle), "nodes"
            )
        )
    if signatures is not None:
        for i, node in enumerate(doc.nodes):
            signature = signatures.get(node.op)
            if signature is None:
                out.append(
                    _later(
                        AMIR_OPERATION_UNKNOWN,
                        f"node {node.id!r} uses {node.op}, which no admitted capability provides",
                        "nodes",
                        i,
                        "op",
                    )
                )
                continue
            _check_inputs(node.inputs, signature, index["parameters"], ("nodes", i, "inputs"), out)
    # A document of 50,000 dangling references: only the findings listed are built.
    cap = FindingCap()
    return [_problem(c, m, *p) for c, m, p in out if cap.keep(c)] + cap.summary()


def apply_patch(
    doc: AmirDocument,
    patch: Patch | Mapping[str, Any],
    signatures: Mapping[str, OperationSignature] | None = None,
) -> AmirDocument:
    """The document after ``patch``, validated; ``doc`` itself is never changed."""
    if not isinstance(patch, Patch):
        try:
            patch = Patch.model_validate(patch)
        except ValidationError as exc:
            raise _invalid(exc, "not a valid patch") from None
    draft = _Draft(doc)
    for i, op in enumerate(patch.ops):
        _apply_op(draft, i, op)
    result = draft.document()
    problems = validate_document(result, signatures)
    if problems:
        raise PatchRejected(problems)
    try:
        return AmirDocument.model_validate(result.to_wire())
    except ValidationError as exc:  # anything the op checks above did not catch
        raise _invalid(exc, "the patched document is not valid") from None


def feature_ops(
    doc: AmirDocument, body_id: str, node: Node, input_name: str = "target"
) -> list[PatchOp]:
    """The ops that apply a feature to a body: add ``node`` with the body's current tip as
    input ``input_name``, then move the body's tip to it. The old tip stays in history."""
    body = next((b for b in doc.bodies if b.id == body_id), None)
    if body is None:
        raise PatchRejected([_problem(PATCH_ENTITY_UNKNOWN, f"no body has id {body_id!r}")])
    fed = node.model_copy(update={"inputs": {**node.inputs, input_name: NodeInput(node=body.tip)}})
    return [NodeAdd(op="node.add", node=fed), BodySetTip(op="body.setTip", id=body_id, tip=fed.id)]


def changed_nodes(before: AmirDocument, after: AmirDocument) -> set[str]:
    """Nodes of ``after`` whose result may differ from ``before``: new nodes, nodes with
    other inputs, nodes reading a parameter whose value or unit changed, and every node
    downstream of those. What a kernel must re-evaluate; the rest it may serve from cache."""
    old_nodes = {n.id: n for n in before.nodes}
    old_params = {p.id: (p.value, p.unit) for p in before.parameters}
    moved = {p.id for p in after.parameters if old_params.get(p.id) != (p.value, p.unit)}
    dirty = set()
    consumers: dict[str, list[str]] = {}
    for node in after.nodes:
        old = old_nodes.get(node.id)
        for value in node.inputs.values():
            if isinstance(value, NodeInput):
                consumers.setdefault(value.node, []).append(node.id)
        if (
            old is None
            or old.inputs != node.inputs
            or any(isinstance(v, ParamInput) and v.param in moved for v in node.inputs.values())
        ):
            dirty.add(node.id)
    stack = list(dirty)
    while stack:
        for consumer in consumers.get(stack.pop(), []):
            if consumer not in dirty:
                dirty.add(consumer)
                stack.append(consumer)
    return dirty
