"""Tiny random models and a real vLLM OpenAI server for them (helper of ``tests/test_e2e_vllm.py``).

:func:`build_model` writes a model folder for one chat template: a byte-level BPE tokenizer
trained here on the template's own renderings, whose vocabulary holds the template's
marker-like strings as special tokens, with the template as ``chat_template``; and a
random-weight Qwen3-architecture model (hidden 128, 2 layers, head size 64, bf16) on that
vocabulary. Nothing is downloaded.

:class:`Server` runs ``python -m vllm.entrypoints.openai.api_server`` on it, bound to
127.0.0.1, offline, with the CPU/tiny-model flags, the scripted-output logits processor
(``tests/vllm_scripted.py``) and only ``--enable-auto-tool-choice --tool-call-parser
autoparser --reasoning-parser autoparser`` for autoparser: the plugin is found through its
``vllm.general_plugins`` entry point, as in a user's ``vllm serve``.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path

BOS, EOS = "<s>", "</s>"
MARKER = re.compile(r"<\|[^|<>\s]{1,48}\|>|<｜[^｜]{1,48}｜>|</?[A-Za-z_][\w:.-]{0,30}>|\[/?[A-Z_]{3,30}\]"
                    r"|<[a-z_]+=|</[a-z_]+>")
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
START_TIMEOUT = float(os.environ.get("AUTOPARSER_VLLM_START_TIMEOUT", "600"))
FLAGS = ["--dtype", "bfloat16", "--max-model-len", "2048", "--enforce-eager", "--max-num-seqs", "4"]
AUTOPARSER_FLAGS = ["--enable-auto-tool-choice", "--tool-call-parser", "autoparser",
                    "--reasoning-parser", "autoparser"]
ENV = {"VLLM_HOST_IP": "127.0.0.1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1",
       "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}


def markers(source: str) -> list[str]:
    """The template's marker-like strings (plus BOS/EOS): the special tokens of its tokenizer."""
    return sorted(set(MARKER.findall(source)) | {BOS, EOS})


def build_model(source: str | dict[str, str], corpus: Iterable[str], out: Path, seed: int = 0) -> Path:
    """Write a tiny random Qwen3 model with a locally trained tokenizer for ``source`` (a template, or
    named templates such as ``{"default": ..., "tool_use": ...}``) into ``out``."""
    import torch
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    sources = [source] if isinstance(source, str) else list(source.values())
    specials = [AddedToken(s, special=True, normalized=False) for s in markers("\n".join(sources))]
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2048, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator([*sources, *corpus], trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token=BOS, eos_token=EOS)
    tok.chat_template = source
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out)

    torch.manual_seed(seed)
    config = Qwen3Config(vocab_size=-(-len(tok) // 64) * 64, hidden_size=128, intermediate_size=256,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=64,
                         max_position_embeddings=4096, tie_word_embeddings=True,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, dtype="bfloat16")
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out)
    GenerationConfig(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id).save_pretrained(out)
    return out


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerError(RuntimeError):
    pass


class Server:
    """``vllm.entrypoints.openai.api_server`` on a model folder, started in its own process group."""

    def __init__(self, model: Path, log: Path, name: str = "tiny", env: dict[str, str] | None = None) -> None:
        self.model, self.log_path, self.name = model, log, name
        self.env = env or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_in = 0.0
        self._t0 = 0.0

    def command(self) -> list[str]:
        return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model),
                "--served-model-name", self.name, "--host", "127.0.0.1", "--port", str(self.port), *FLAGS,
                "--logits-processors", "vllm_scripted:ScriptedOutput", *AUTOPARSER_FLAGS]

    def launch(self) -> None:
        """Start the server process (returns at once; :meth:`wait` waits for it to serve)."""
        env = dict(os.environ, **ENV, **self.env)
        # this checkout's autoparser and the logits processor, in the server's processes too
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), *filter(None, [env.get("PYTHONPATH")])])
        self._t0 = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env,
                                         stdin=subprocess.DEVNULL, start_new_session=True)

    def wait(self) -> None:
        """Wait until ``/health`` answers; raise ``ServerError`` with the log's end if it never does."""
        if self.started_in:
            return
        if self.proc is None:
            self.launch()
        assert self.proc is not None
        health = f"http://127.0.0.1:{self.port}/health"
        while time.monotonic() - self._t0 < START_TIMEOUT:
            if self.proc.poll() is not None:
                raise ServerError(f"vLLM server exited with {self.proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError, urllib.error.URLError), \
                    urllib.request.urlopen(health, timeout=2) as r:
                if r.status == 200:
                    self.started_in = time.monotonic() - self._t0
                    return
            time.sleep(0.5)
        self.stop()
        raise ServerError(f"vLLM server not up after {START_TIMEOUT:.0f}s:\n{self.log_tail()}")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def log_tail(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])


class Pool:
    """One server per key, in the order the tests use them; the next one starts while the
    current one serves (server start-up is mostly single-threaded imports)."""

    def __init__(self, order: list[str], prepare: Callable[[str], Server]) -> None:
        self.order, self.prepare = order, prepare
        self.servers: dict[str, Server] = {}

    def _launch(self, key: str) -> Server:
        if key not in self.servers:
            server = self.servers[key] = self.prepare(key)
            server.launch()
        return self.servers[key]

    def get(self, key: str) -> Server:
        server = self._launch(key)
        if key in self.order:
            at = self.order.index(key)
            if at + 1 < len(self.order):
                self._launch(self.order[at + 1])
        server.wait()
        return server

    def release(self, key: str) -> None:
        server = self.servers.get(key)
        if server is not None:
            server.stop()

    def close(self) -> None:
        for server in self.servers.values():
            server.stop()
