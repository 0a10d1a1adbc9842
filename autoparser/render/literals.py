"""What a template's syntax tree says without rendering it: the text it writes itself (its string
literals and output text) and the variable names it mentions, from one walk of the tree."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from jinja2 import nodes


class TemplateText(NamedTuple):
    """``literals``: string constants and output text, in first-seen order; ``names``: every
    variable name the template mentions (read or assigned)."""

    literals: tuple[str, ...]
    names: frozenset[str]


def walk(tree: nodes.Node) -> Iterator[nodes.Node]:
    """Every node below ``tree``, in the pre-order of jinja's ``find_all``, without its two
    generators per node (a node's fields live in its ``__dict__``)."""
    node_type = nodes.Node
    stack: list[nodes.Node] = [tree]
    pop, extend = stack.pop, stack.extend
    first = True
    while stack:
        node = pop()
        if first:
            first = False
        else:
            yield node
        attrs = node.__dict__
        kids: list[nodes.Node] = []
        for name in node.fields:
            value = attrs.get(name)
            if type(value) is list:
                kids.extend([v for v in value if isinstance(v, node_type)])
            elif isinstance(value, node_type):
                kids.append(value)
        if kids:
            kids.reverse()
            extend(kids)


def template_text(tree: nodes.Template) -> TemplateText:
    """The literals (:func:`template_literals`) and the names of ``tree``, from one walk."""
    out: list[str] = []
    names: set[str] = set()

    def const(node: nodes.Node) -> str | None:
        if isinstance(node, nodes.Const) and isinstance(node.value, str):
            return node.value
        if isinstance(node, nodes.TemplateData):
            return node.data
        if isinstance(node, nodes.Add):
            left, right = const(node.left), const(node.right)
            return left + right if left is not None and right is not None else None
        return None

    def runs(items: Sequence[nodes.Node]) -> None:
        run: list[str] = []
        for item in [*items, None]:
            text = const(item) if item is not None else None
            if text is not None:
                run.append(text)
                continue
            if len(run) > 1:
                out.append("".join(run))
            run = []

    texts = (nodes.Const, nodes.TemplateData, nodes.Add)
    for node in walk(tree):
        if isinstance(node, nodes.Name):
            names.add(node.name)
        elif isinstance(node, (nodes.Concat, nodes.Output)):
            runs(node.nodes)
        elif isinstance(node, texts):
            text = const(node)
            if text is not None:
                out.append(text)
    return TemplateText(tuple(dict.fromkeys(out)), frozenset(names))


def template_literals(tree: nodes.Template) -> tuple[str, ...]:
    """String constants and output text, with literals joined by ``~`` or ``+`` (or written in one
    output tag) folded together (``'[|' ~ 'assistant' ~ '|]'``), in first-seen order."""
    return template_text(tree).literals
