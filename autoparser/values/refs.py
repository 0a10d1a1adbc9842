"""Local ``$ref`` resolution in JSON schemas: every consumer (plan, GBNF, PEG, argument typing)
sees plain schemas; a reference that is not local raises :class:`~autoparser.errors.SchemaError`."""

from __future__ import annotations

from typing import Any

from ..errors import SchemaError


def resolve_pointer(root: Any, ref: str) -> Any:
    """Target of a local ``$ref`` (``#/$defs/X``, ``#/definitions/X`` or any JSON pointer) in `root`;
    :class:`SchemaError` for a reference that is not local or does not resolve."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise SchemaError(f"unsupported $ref {ref!r}: only local references (#/$defs/...) are resolved", ref=ref)
    node = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise SchemaError(f"unresolved $ref {ref!r}", ref=ref) from None
    return node


_NOT_SCHEMAS = frozenset({"const", "enum", "default", "examples", "$defs", "definitions"})
MAX_INLINED_REFS = 256      # $ref expansions per schema; past it (or inside a recursion) a $ref stays a $ref
MAX_INLINED_NODES = 200_000  # JSON values the expanded schema may hold; past it a $ref stays a $ref
MAX_INLINED_DEPTH = 96      # nesting at which a $ref is no longer expanded


def inline_refs(schema: Any, *, strict: bool = True) -> Any:
    """`schema` with its local ``$ref``s replaced by their targets (sibling keywords kept over the
    target), so that every consumer (GBNF, PEG, argument typing) sees plain schemas. A recursive
    reference stays a ``$ref`` once inside its own expansion (the grammar turns it into a recursive
    rule against the root, whose ``$defs`` are kept), as does everything past
    :data:`MAX_INLINED_REFS` expansions, past :data:`MAX_INLINED_NODES` values or deeper than
    :data:`MAX_INLINED_DEPTH` levels (so the result stays as bounded as the schema given). A
    reference that is not local or does not resolve raises :class:`SchemaError` (or, not `strict`,
    stays as it is); the input is never modified."""
    budget = [MAX_INLINED_REFS, MAX_INLINED_NODES]

    def walk(node: Any, stack: tuple[str, ...], depth: int) -> Any:
        budget[1] -= 1
        if isinstance(node, list):
            return [walk(v, stack, depth + 1) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                target = resolve_pointer(schema, ref)
            except SchemaError:
                if strict:
                    raise
                ref = None
            if ref is not None and ref not in stack and budget[0] > 0 and budget[1] > 0 \
                    and depth < MAX_INLINED_DEPTH:
                budget[0] -= 1
                rest = {k: walk(v, stack, depth + 1) for k, v in node.items() if k != "$ref"}
                inner = walk(target, (*stack, ref), depth)
                if not rest:
                    return inner
                return {**inner, **rest} if isinstance(inner, dict) else {"allOf": [inner], **rest}
        return {k: v if k in _NOT_SCHEMAS else walk(v, stack, depth + 1) for k, v in node.items()}

    return walk(schema, (), 0)


__all__ = ["MAX_INLINED_REFS", "inline_refs", "resolve_pointer"]
