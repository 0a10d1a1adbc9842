"""Per-request decisions for inference servers, derived from the template analysis and tokenizer facts.

:func:`decide` gives the PRE.1-PRE.6 :class:`DecisionRow` of a template, or of one
request (``Request.decisions``): ``skip_special_tokens`` and the tokens to preserve
(:mod:`.tokens`), the ``chat_template_kwargs`` that switch reasoning off (:mod:`.kwargs`),
prompt-opened reasoning and tool continuation, forced tool calls, stop strings, and the
stray-reasoning-marker strip.
"""

from .kwargs import ReasoningKwargs, discover_reasoning_kwargs
from .row import DecisionRow, decide
from .tokens import SpecialTokenReport, special_token_status

__all__ = ["DecisionRow", "ReasoningKwargs", "SpecialTokenReport", "decide", "discover_reasoning_kwargs",
           "special_token_status"]
