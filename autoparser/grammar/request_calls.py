"""The calls in a request's GBNF: the section, each call's opener (spelled where it competes with
free text), the call's body (a layout's pieces, a JSON call object or a framed name, id and
arguments), its closing markers, the separator between calls and the call id."""

from __future__ import annotations

from .. import ir
from .. import markers as mk
from ..analysis.layout.model import CallLayout
from ..analysis.model import LINE_ARGS
from ..plan.openers import opening_id
from .gbnf import char_class, literal
from .layout import layout_call, name_index
from .pieces import WS_MAX, piece_expr
from .regex_gbnf import ID_MAX, _regex_gbnf
from .request_args import _FramedArgs
from .request_json import _JsonCalls
from .request_rules import _join

ID_CHARS = "[^ \\t\\r\\n<>\\x5B\\x5D{}\"'|,=()`]"        # a call id between markers
WORD_CHARS = "[^ \\t\\r\\n<>\\x5B\\x5D{}\"'|,:=()`]"     # an id with no closing marker (tagged_frame._NAME)


class _Calls(_JsonCalls, _FramedArgs):
    """The call section and its calls, from their opener on."""

    def calls(self, first: str | None, opened: bool = False, spell_start: bool = False) -> str:
        """The calls from their opener; with `first`, from free content through ``op.exact``; ``opened``:
        from inside the first call, whose start the prompt wrote (its names spelled: free text competes);
        ``spell_start``: the section start spelled (it competes with an optional reasoning block)."""
        t, b, op = self.t, self.b, self.op
        rest = self.opener_rest()
        # inline alternatives: a named rule made only of terminals becomes one llguidance lexeme,
        # which would hide a shorter competing lexeme (see _ordered)
        per_call = ""
        if op.role in ("name_prefix", "call_name"):
            per_call = op.marker
        elif t.call_start.strip():
            per_call = t.call_start
        body = b.rule("call-body", " | ".join(f"( {self.call_body(n)} )" for n in self.plan.names))
        # outside a section the free tail competes with the next call: spell its markers out
        # (inside one the section end, a literal, competes: keep literals there)
        loose = op.role != "section_start" or not self.split_stop(t.section_end)[0].strip()
        opener = (self.spelled(per_call) if loose else self.marker("call-start", per_call)) if per_call else ""
        ws = self.ws_to_body()
        one = b.rule("call", _join(opener, ws, body) if opener else body)
        head = one
        if first is None and not opened and self.plan.lazy and not op.role and t.style == "layout" and \
                t.layout is not None and name_index(t.layout) > 0:
            # no marker opens the calls: the trigger is the name, so the first call is read from there
            at = name_index(t.layout)
            head = b.rule("first-call", " | ".join(f"( {self.call_body(n, from_piece=at)} )" for n in self.plan.names))
        if opened:
            names = b.rule("opened-call-body", " | ".join(f"( {self.call_body(n, spell=True)} )"
                                                          for n in self.plan.names))
            lead = self.marker("name-prefix", t.name_prefix) if op.role == "call_name" else ""
            head = b.rule("opened-call", _join(lead, ws, names) if lead else names)
        elif spell_start and op.role != "section_start" and self.opener_extended(per_call):
            # a forced request's first call, whose spelled opener begins an optional reasoning or answer
            # start too: its names spelled as well (``to=self<|message|>`` and ``to=search_docs``)
            names = b.rule("first-call-body", " | ".join(f"( {self.call_body(n, spell=True)} )"
                                                         for n in self.plan.names))
            head = b.rule("first-call", _join(opener, ws, names) if opener else names)
        elif first is not None and op.role != "section_start":
            if not op.role and t.style == "layout":
                # after free content, names spelled one character class at a time: a name literal
                # would be one llguidance lexeme that outruns, then hides, content going on
                spelled = b.rule("first-call-body", " | ".join(f"( {self.call_body(n, spell=True)} )"
                                                               for n in self.plan.names))
                head = b.rule("first-call", _join(first, spelled))
            else:
                head = b.rule("first-call", _join(first, rest, ws, body) if op.role else _join(first, one))
        more = ""
        # ``key: value`` lines that no marker of the call closes: what follows the last value on its
        # line is the separator or the section end, white space before them starts with a line break
        open_lines = t.args in LINE_ARGS and not self.after_lines()
        if self.plan.parallel:
            sep = _join(self.ws, self.spelled(t.separator)) if loose and t.separator.strip() \
                else self.lead("call-separator", t.separator)
            item = _join(sep, self.ws, one)
            if t.style == "layout" and t.layout is not None and _ends_with_args(t.layout) and \
                    (t.layout.args.kind == "items" or t.layout.args.codec):
                # the call's last value may run on: the white space before the next call one character
                # at a time (a ``ws`` lexeme would outrun the value's own spaces in llguidance)
                wsc = b.recursive_rule("ws-chars", lambda r: f"| [ \\t\\n\\r] {r}", key=("ws-chars",))
                item = _join(wsc, self.spelled(t.separator), wsc, one) if t.separator.strip() else _join(wsc, one)
            if open_lines:
                glued = self.spelled(t.separator) if t.separator.strip() and not t.separator[0].isspace() else ""
                marker = self.marker("call-separator", t.separator)
                # a blank separator: the line break is the one the next call's first literal opens with
                nxt = t.separator if t.separator.strip() else t.separator + (per_call or t.call_start or t.name_prefix)
                brk = self.line_break_ws() if self.break_before(nxt) else ""
                item = _join(glued, self.ws, one) if glued else _join(brk, marker, self.ws if marker else "", one)
            more = b.recursive_rule("more-calls", lambda r: f"| {item} {r}", key=("more-calls", item))
        seq = _join(head, more)
        if op.role != "section_start":
            return seq
        if first is not None:
            start = _join(first, rest)
        else:
            start = self.spelled(t.section_start) if spell_start else self.marker("section-start", t.section_start)
        close = self.lead("section-end", self.split_stop(t.section_end)[0])
        if open_lines and close:
            end = self.split_stop(t.section_end)[0]
            close = _join(self.line_break_ws() if self.break_before(end) else "", self.marker("section-end", end))
        return b.rule("tool-calls", _join(start, self.ws, seq, close))

    def opener_extended(self, opener: str) -> bool:
        """Whether a marker that may come instead of the first call (the reasoning or the content
        start) begins with the call's opener `opener` and goes on after it."""
        head = opener.strip()
        if not head:
            return False
        others = (self.ir.get("reasoning_start"), self.ir.get("content_start"))
        return any(isinstance(m, ir.Marker) and m.text.strip().startswith(head) and len(m.text.strip()) > len(head)
                   for m in others)

    def opener_rest(self) -> str:
        """The opener after ``op.exact`` (what follows free content in required mode)."""
        op = self.op
        if op.role == "call_name" or not op.role:
            return ""
        tokens = mk.tokens(op.marker)
        rest = [tokens[0][len(op.exact):], *tokens[1:]] if tokens[0].startswith(op.exact) else tokens[1:]
        head, *tail = rest or [""]
        if not head:
            return self.lead("opener-rest", " ".join(tail))
        # what follows the literal head inside its piece is glued to it (no whitespace before); spelled,
        # as it competes with free text and the reasoning opener (`` to=self<|message|>``)
        return _join(self.spelled(head), self.lead("opener-rest", " ".join(tail)))

    def call_body(self, tool: str, spell: bool = False, from_piece: int = 0) -> str:
        """One call of `tool` after its per-call opener (starting with no whitespace), inline; ``spell``:
        its name one character class at a time; ``from_piece``: a layout's call from that piece on."""
        t = self.t
        close = _join(self.lead_closing("call-close", t.call_close), self.lead_closing("call-end", t.call_end))
        if t.style == "layout" and t.layout is not None:
            # the opener printed the layout's first literal (the name prefix), or the call starts at its name
            start = 1 if self.op.role in ("name_prefix", "call_name") and t.layout.pieces[0].kind == "lit" else 0
            return _join(layout_call(self, tool, max(start, from_piece), spell), close)
        if t.args in LINE_ARGS or t.args == "json_attr":
            close = self.after_lines()     # text that runs to the close: no free white space before it
        if t.style == "json" and t.json is not None:
            return _join(self.json_call(tool), close)
        parts = []
        if t.id_position == "before_name":
            parts += [self.id_part(), self.ws]
        if self.op.role not in ("name_prefix", "call_name") and t.name_prefix.strip():
            parts += [self.marker("name-prefix", t.name_prefix), self.ws]
        name = " ".join(char_class([c]) for c in tool) if spell and not t.name_in_id else self.name_expr(tool)
        parts += [name, self.lead("name-suffix", t.name_suffix)]
        if t.id_position == "after_name":
            parts += [self.ws, self.id_part()]
        parts.append(self.tagged_args(tool))
        if t.id_position == "after_args":
            parts += [self.ws, self.id_part()]
        parts.append(close)
        return _join(*parts)

    def after_lines(self) -> str:
        """The call's closing markers after ``key: value`` lines. Only a line break may come before
        the first one: a raw value's own spaces are its text (llguidance, lexing greedily, would
        read them as the white space before the marker and fail at the next word)."""
        t = self.t
        nl = self.line_break_ws()
        parts: list[str] = []
        for role, m in (("call-close", t.call_close), ("call-end", t.call_end)):
            req_part, opt_part = self.split_stop(m)
            if req_part.strip():
                parts.append(_join((nl if self.break_before(m) else "") if not parts else self.ws,
                                   self.marker(role, req_part)))
            if opt_part.strip():
                parts.append(f"( {self.lead(role + '-stop', opt_part)} )?")
        return _join(*parts)

    def break_before(self, m: str) -> bool:
        """Whether the template writes a line break between the last ``key: value`` line and
        marker ``m`` (which follows it, or follows a blank call close)."""
        t = self.t
        lead = m[: len(m) - len(m.lstrip())]
        return "\n" in lead or (not t.call_close.strip() and "\n" in t.call_close)

    def line_break_ws(self) -> str:
        """The line break before what follows ``key: value`` lines (no more white space: llguidance
        would read the indentation of a literal block's next line as white space before the marker)."""
        return self.b.rule("line-break-ws", '"\\n"')

    def lead_closing(self, role: str, m: str) -> str:
        """A closing marker; end-of-turn markers it ends with are optional (the server stops there)."""
        req_part, opt_part = self.split_stop(m)
        out = self.lead(role, req_part)
        if opt_part.strip():
            out = _join(out, f"( {self.lead(role + '-stop', opt_part)} )?")
        return out

    def name_expr(self, tool: str) -> str:
        t = self.t
        if t.name_in_id:
            try:
                return _regex_gbnf(t.name_in_id, (tool,))
            except ValueError:
                pass
        return literal(tool)

    def id_part(self) -> str:
        """``id_prefix ID id_suffix``: the id text is bounded and ends at the suffix's first piece."""
        t = self.t
        prefix = self.marker("id-prefix", t.id_prefix)
        pieces = mk.tokens(t.id_suffix)
        if not pieces:
            ident = self.b.rule("call-id", f"{WORD_CHARS}{{1,{ID_MAX}}}")
            return _join(prefix, self.ws if prefix else "", ident)
        # (white space the suffix begins with comes between: ``call_1`` then ``\n  arguments:``)
        gap = f" [ \\t\\r\\n]{{0,{WS_MAX}}}" if t.id_suffix[:1].isspace() else ""
        ident = self.b.rule("call-id", f"{ID_CHARS}{{1,{ID_MAX}}}{gap} {piece_expr(pieces[0])}")
        rest = self.lead("id-suffix-rest", " ".join(pieces[1:]))
        return _join(prefix, self.ws if prefix else "", ident, rest)


__all__ = ["_Calls"]


def _ends_with_args(layout: CallLayout) -> bool:
    """The call ends with its arguments (a call that opens with its id: white space at most after
    them, ``c1|f|k|"v"\\n``): its last value may run on into the next call."""
    pieces = layout.pieces
    if pieces[-1].kind == "lit" and not pieces[-1].text.strip() and len(pieces) > 1 and opening_id(layout):
        pieces = pieces[:-1]
    return pieces[-1].kind == "args"
