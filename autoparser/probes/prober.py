"""Rendering probe conversations, with the assistant turn cut out of the full rendering."""

from __future__ import annotations

import json
from typing import Any

from ..diff.split import common_prefix_len, fix_prefix_end
from ..errors import TemplateError, TemplateLimitError
from ..render import Renderer
from ..render.compat import render_compat
from . import needles as N


class Prober:
    """Renders needle conversations after a fixed history and caches the results."""

    def __init__(self, renderer: Renderer, kwargs: dict[str, Any] | None = None) -> None:
        self.r = renderer
        self.kwargs = dict(kwargs or {})
        self._cache: dict[str, str | None] = {}
        self._names: frozenset[str] | None = getattr(renderer, "names", None)
        self.history = self._pick_history()

    def _pick_history(self) -> list[dict[str, Any]]:
        """System + user when the template keeps them stable once an assistant turn follows."""
        with_system = [{"role": "system", "content": N.SYSTEM}, {"role": "user", "content": N.USER}]
        out = self.render(with_system, None, False)
        if out is not None and N.SYSTEM in out and N.USER in out:
            turn = {"role": "assistant", "content": N.ASSISTANT}
            full = self.render([*with_system, turn], None, False)
            if full is not None and full.startswith(out):
                return with_system
        return [{"role": "user", "content": N.USER}]

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
               add_generation_prompt: bool = False, **kw: Any) -> str | None:
        # the key keeps insertion order: templates that print a whole dict with tojson show it. It holds
        # the kwargs the render gets (the prober's merged with the probe's), so probes that differ only
        # in restating a prober kwarg share one render (about one probe render in seven). A kwarg the
        # template never names cannot change the rendering: it is left out, so a probe of a switch the
        # template does not have (enable_thinking=False) is the rendering without it, rendered once
        merged = {k: v for k, v in {**self.kwargs, **kw}.items() if self._names is None or k in self._names}
        key = json.dumps([messages, tools, add_generation_prompt, merged])
        if key not in self._cache:
            self._cache[key] = self._render_now(messages, tools, add_generation_prompt, merged)
        return self._cache[key]

    def _render_now(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, agp: bool,
                    merged: dict[str, Any]) -> str | None:
        try:
            return render_compat(self.r, messages, tools=tools, add_generation_prompt=agp, **merged)
        except TemplateLimitError:
            raise   # a runaway template: one limit hit ends the analysis instead of every probe paying it
        except TemplateError:
            return None

    def prompt(self, tools: list[dict[str, Any]] | None = None, **kw: Any) -> str | None:
        return self.render(self.history, tools, True, **kw)

    def full(self, msg: dict[str, Any], tools: list[dict[str, Any]] | None = None, **kw: Any) -> str | None:
        return self.render([*self.history, msg], tools, False, **kw)

    def turn(self, msg: dict[str, Any], tools: list[dict[str, Any]] | None = None, **kw: Any) -> str | None:
        """The assistant turn as the model would write it after the generation prompt."""
        full = self.full(msg, tools, **kw)
        prompt = self.prompt(tools, **kw)
        if full is None or prompt is None:
            return None
        if full.startswith(prompt):
            return full[len(prompt):]
        base = self.render(self.history, tools, False, **kw) or ""
        n = fix_prefix_end(full, common_prefix_len(prompt, full))
        n = max(n, len(base)) if full.startswith(base) else n
        return full[n:]

    def generation_prompt(self, tools: list[dict[str, Any]] | None = None, **kw: Any) -> str:
        with_gp = self.prompt(tools, **kw) or ""
        without = self.render(self.history, tools, False, **kw) or ""
        n = common_prefix_len(with_gp, without)
        return with_gp[n:]
