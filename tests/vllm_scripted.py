"""A vLLM logits processor that makes a random-weight model write a scripted output (test helper).

Loaded by the server of ``tests/test_e2e_vllm.py`` with
``--logits-processors vllm_scripted:ScriptedOutput`` (``tests/`` on the server's PYTHONPATH).
A request opts in with ``extra_body={"vllm_xargs": {"script": [token ids...]}}``: the
model then writes exactly those tokens, one per step, and then

* ``"then": "eos"`` (the default) the id in ``"eos"``, so generation stops there;
* ``"then": "free"`` whatever the model samples, under whatever constraint applies (a
  scripted reasoning block followed by free, grammar-constrained calls).

Requests without a script are left alone. This module imports vLLM and torch, so it is
only imported inside the e2e server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from vllm.v1.sample.logits_processor import AdapterLogitsProcessor


def _forcing(script: list[int], eos: int | None) -> Callable[[list[int], torch.Tensor], torch.Tensor]:
    def force(output_ids: list[int], logits: torch.Tensor) -> torch.Tensor:
        n = len(output_ids)
        token = script[n] if n < len(script) else eos
        if token is None:
            return logits
        forced = torch.full_like(logits, float("-inf"))
        forced[token] = 0.0
        return forced

    return force


class ScriptedOutput(AdapterLogitsProcessor):  # type: ignore[misc]
    """Per request: force the token ids in ``vllm_xargs["script"]``."""

    def is_argmax_invariant(self) -> bool:
        return False

    def new_req_logits_processor(self, params: Any) -> Callable[[list[int], torch.Tensor], torch.Tensor] | None:
        args = getattr(params, "extra_args", None) or {}
        script = args.get("script")
        if not script:
            return None
        ids = [int(t) for t in script]
        eos = None if args.get("then") == "free" else int(args["eos"])
        return _forcing(ids, eos)
