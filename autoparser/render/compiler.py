"""jinja's code generator with the render limits wired in: a tree rewrite plus a few overrides.

jinja forbids custom node types, so before it compiles a template
:func:`limit_tree` rewrites the tree in place with its own nodes, calls of two
internal filters (their names are not identifiers, so no template can spell them):

* every ``for`` loop's iterable ``it`` becomes ``it|LOOP_ITER``, iterated through
  :func:`~autoparser.render.runtime.loop_iter` (the deadline check on every step);
* every ``a ~ b ~ c`` (:class:`jinja2.nodes.Concat`) becomes ``a|JOIN(b, c)``,
  :func:`~autoparser.render.runtime.limited_join`, which refuses a result past
  the size limit before joining. A constant one written by an output tag still folds at
  compile time (jinja evaluates constant output while compiling; its optimizer is off).

:class:`LimitedCodeGenerator` runs that rewrite, tells each ``JOIN`` how its frame
joins (as jinja's ``visit_Concat`` decides) and, around jinja's own code
(``super()``), wraps list/tuple/dict literals in ``environment.limited_literal``,
slices in ``environment.limited_slice``, and makes block buffers
``environment.new_buffer()``. The hooks live in :mod:`~autoparser.render.runtime`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame

from .runtime import COMPILING

LOOP_ITER = "autoparser:loop_iter"
JOIN = "autoparser:join"


def limit_tree(root: nodes.Node) -> None:
    """Rewrite ``root`` in place: loop iterables through :data:`LOOP_ITER`, ``~`` into :data:`JOIN`.

    Walks without recursion; running it again on a rewritten tree changes nothing.
    """
    stack = [root]
    pop, push = stack.pop, stack.append
    concat = nodes.Concat
    while stack:
        node = pop()
        if type(node) is nodes.For and not (isinstance(node.iter, nodes.Filter) and node.iter.name == LOOP_ITER):
            node.iter = nodes.Filter(node.iter, LOOP_ITER, [], [], None, None,
                                     lineno=node.iter.lineno, environment=node.environment)
        attrs = node.__dict__  # a node's fields are its attributes
        for name in node.fields:
            value = attrs.get(name)
            if type(value) is list:
                for i, item in enumerate(value):
                    if isinstance(item, nodes.Node):
                        if type(item) is concat and item.nodes:
                            value[i] = item = _join(item)
                        push(item)
            elif isinstance(value, nodes.Node):
                if type(value) is concat and value.nodes:
                    value = attrs[name] = _join(value)
                push(value)


def _join(node: nodes.Concat) -> nodes.Filter:
    first, *rest = node.nodes
    return nodes.Filter(first, JOIN, rest, [], None, None, lineno=node.lineno, environment=node.environment)


class LimitedCodeGenerator(CodeGenerator):
    """jinja's code generator, compiling the tree :func:`limit_tree` rewrote, with the limit hooks."""

    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        limit_tree(node)
        super().visit_Template(node, frame)

    def enter_frame(self, frame: Frame) -> None:
        # every frame of a compile shares one evaluation context, entered first with the root frame:
        # mark it, so a `~` folded at compile time joins as `Concat.as_const` does
        setattr(frame.eval_ctx, COMPILING, True)
        super().enter_frame(frame)

    def visit_Filter(self, node: nodes.Filter, frame: Frame) -> None:
        if node.name == JOIN:
            # jinja's Concat joins with markup_join when the compiling frame autoescapes; in a volatile
            # frame it tests `context.eval_ctx.volatile`, which is never true at render time
            markup = not frame.eval_ctx.volatile and bool(frame.eval_ctx.autoescape)
            node.kwargs = [nodes.Keyword("markup", nodes.Const(markup), lineno=node.lineno)]  # type: ignore[list-item] # jinja annotates Pair; its parser makes Keyword
        super().visit_Filter(node, frame)

    def buffer(self, frame: Frame) -> None:
        super().buffer(frame)
        self.writeline(f"{frame.buffer} = environment.new_buffer()")

    def _checked(self, hook: str, visit: Callable[[Any, Frame], None], node: nodes.Expr, frame: Frame) -> None:
        self.write(f"environment.{hook}(")
        visit(node, frame)
        self.write(")")

    def visit_List(self, node: nodes.List, frame: Frame) -> None:
        self._checked("limited_literal", super().visit_List, node, frame)

    def visit_Dict(self, node: nodes.Dict, frame: Frame) -> None:
        self._checked("limited_literal", super().visit_Dict, node, frame)

    def visit_Tuple(self, node: nodes.Tuple, frame: Frame) -> None:
        if node.ctx == "load":
            self._checked("limited_literal", super().visit_Tuple, node, frame)
        else:
            super().visit_Tuple(node, frame)

    def visit_Getitem(self, node: nodes.Getitem, frame: Frame) -> None:
        if isinstance(node.arg, nodes.Slice):  # jinja slices directly, bypassing environment.getitem
            self._checked("limited_slice", super().visit_Getitem, node, frame)
        else:
            super().visit_Getitem(node, frame)
