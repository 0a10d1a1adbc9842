"""Adapters that plug autoparser into inference servers.

``autoparser.integrations.common`` holds what every adapter needs and imports no
server: the template a tokenizer carries (analysed once per template digest),
marker token ids, and where reasoning ends in raw output.
``autoparser.integrations.vllm`` is the vLLM tool and reasoning parser pair,
registered by ``autoparser.integrations.vllm_plugin`` (a ``vllm.general_plugins``
entry point). Only modules named after a server import that server.
"""
