"""The text a template writes itself: its string literals and output text, read off its syntax tree."""

from __future__ import annotations

from collections.abc import Sequence

from jinja2 import nodes


def template_literals(tree: nodes.Template) -> tuple[str, ...]:
    """String constants and output text, with literals joined by ``~`` or ``+`` (or written in one
    output tag) folded together (``'[|' ~ 'assistant' ~ '|]'``), in first-seen order."""
    out: list[str] = []

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

    for node in tree.find_all((nodes.Const, nodes.TemplateData, nodes.Concat, nodes.Add, nodes.Output)):
        if isinstance(node, (nodes.Concat, nodes.Output)):
            runs(node.nodes)
        else:
            text = const(node)
            if text is not None:
                out.append(text)
    return tuple(dict.fromkeys(out))
