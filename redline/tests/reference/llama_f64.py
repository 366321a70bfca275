#!/usr/bin/env python3
"""An independent float64 reference of a llama-architecture GGUF model (SmolLM2-135M-Instruct).

It shares nothing with the Rust engine: the GGUF file is read by llama.cpp's own `gguf` package,
weights are dequantized by `gguf.quants.dequantize` (float32 values, widened to float64), and every
operation after that runs in numpy float64. The tokenizer is the HF `tokenizers` BPE built from the
GGUF vocabulary and merges. Its purpose is to give Rust tests numbers that were not produced by the
code under test.

Facts the forward pass relies on (checked against llama.cpp):
- llama.cpp's `llama_model_rope_type` returns LLAMA_ROPE_TYPE_NORM for LLM_ARCH_LLAMA ("a normal
  RoPE, operating on pairs of consecutive head values"), and `convert_hf_to_gguf.py` permutes the HF
  q_proj/k_proj rows (`LlamaModel.permute`) so that the HF rotate-half layout becomes adjacent pairs.
  So here the pair (x[2i], x[2i+1]) of each head is rotated by pos * base^(-2i/head_dim).
- Grouped-query attention: query head h reads kv head h // (n_head / n_head_kv).
- No `output.weight` tensor: the logits use the token embedding (tied).

Subcommands:
  tokenize GGUF TEXT...            print the token ids of each TEXT (JSON)
  run GGUF TOKENS.json OUT.json    logits of every position of every sequence in TOKENS.json
                                   (a JSON list of token-id lists) as float32 little-endian base64,
                                   plus argmax and top-k
  fixture GGUF OUT.json            greedy continuations of the fixture prompts, top-k logits per
                                   step and a perplexity check (writes the test fixture)
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import sys
import time

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

GREEDY_TOKENS = 8
TOP_K = 5
FIXTURE_PROMPTS = [
    ("france", "The capital of France is", False),
    ("once", "Once upon a time,", False),
    ("chat", "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n", True),
    ("count", "1, 2, 3, 4,", False),
]
PERPLEXITY_TEXT = "The quick brown fox jumps over the lazy dog. It was a sunny day in the park."


def field(reader: GGUFReader, key: str):
    f = reader.fields.get(key)
    if f is None:
        raise KeyError(f"GGUF metadata key {key!r} is missing")
    return f.contents()


class Model:
    def __init__(self, path: str):
        self.reader = reader = GGUFReader(path)
        arch = field(reader, "general.architecture")
        if arch != "llama":
            raise ValueError(f"general.architecture is {arch!r}, this reference is for 'llama'")
        self.n_layer = int(field(reader, "llama.block_count"))
        self.n_embd = int(field(reader, "llama.embedding_length"))
        self.n_head = int(field(reader, "llama.attention.head_count"))
        self.n_head_kv = int(field(reader, "llama.attention.head_count_kv"))
        self.eps = float(field(reader, "llama.attention.layer_norm_rms_epsilon"))
        self.rope_base = float(field(reader, "llama.rope.freq_base"))
        self.head_dim = self.n_embd // self.n_head
        rope_dims = int(field(reader, "llama.rope.dimension_count"))
        if rope_dims != self.head_dim:
            raise ValueError(f"rope.dimension_count {rope_dims} != head_dim {self.head_dim} (partial RoPE unsupported)")
        self.tensors = {t.name: t for t in reader.tensors}
        self.w = {}
        for name, t in self.tensors.items():
            # numpy shape is the GGUF shape reversed: (rows = out features, cols = in features).
            self.w[name] = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float64)
        if "output.weight" in self.w:
            raise ValueError("output.weight present: this reference assumes tied embeddings")

    def rms_norm(self, x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * weight

    def rope(self, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """x: (T, heads, head_dim); GGML normal mode: adjacent pairs rotated."""
        half = self.head_dim // 2
        inv = self.rope_base ** (-2.0 * np.arange(half, dtype=np.float64) / self.head_dim)
        angle = positions[:, None].astype(np.float64) * inv[None, :]  # (T, half)
        cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x0 * cos - x1 * sin
        out[..., 1::2] = x0 * sin + x1 * cos
        return out

    def attention(self, layer: int, h: np.ndarray, positions: np.ndarray) -> np.ndarray:
        T, hd = h.shape[0], self.head_dim
        w = lambda n: self.w[f"blk.{layer}.{n}.weight"]  # noqa: E731
        q = (h @ w("attn_q").T).reshape(T, self.n_head, hd)
        k = (h @ w("attn_k").T).reshape(T, self.n_head_kv, hd)
        v = (h @ w("attn_v").T).reshape(T, self.n_head_kv, hd)
        q, k = self.rope(q, positions), self.rope(k, positions)
        group = self.n_head // self.n_head_kv
        causal = np.triu(np.ones((T, T), dtype=bool), k=1)
        out = np.empty((T, self.n_head, hd))
        for head in range(self.n_head):
            kv = head // group
            scores = (q[:, head, :] @ k[:, kv, :].T) / math.sqrt(hd)
            scores[causal] = -np.inf
            scores -= scores.max(axis=-1, keepdims=True)
            p = np.exp(scores)
            p /= p.sum(axis=-1, keepdims=True)
            out[:, head, :] = p @ v[:, kv, :]
        return out.reshape(T, self.n_embd) @ w("attn_output").T

    def ffn(self, layer: int, h: np.ndarray) -> np.ndarray:
        w = lambda n: self.w[f"blk.{layer}.{n}.weight"]  # noqa: E731
        gate, up = h @ w("ffn_gate").T, h @ w("ffn_up").T
        return (gate / (1.0 + np.exp(-gate)) * up) @ w("ffn_down").T

    def forward(self, tokens: list[int]) -> np.ndarray:
        """Logits (T, vocab) of every position, float64."""
        embd = self.w["token_embd.weight"]
        vocab = embd.shape[0]
        for i, t in enumerate(tokens):
            if not 0 <= t < vocab:
                raise ValueError(f"token {t} at index {i} is outside the vocabulary (0..{vocab})")
        x = embd[np.asarray(tokens)]
        positions = np.arange(len(tokens))
        for layer in range(self.n_layer):
            x = x + self.attention(layer, self.rms_norm(x, self.w[f"blk.{layer}.attn_norm.weight"]), positions)
            x = x + self.ffn(layer, self.rms_norm(x, self.w[f"blk.{layer}.ffn_norm.weight"]))
        return self.rms_norm(x, self.w["output_norm.weight"]) @ embd.T


def tokenizer(reader: GGUFReader):
    from tokenizers import Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import BPE

    if field(reader, "tokenizer.ggml.model") != "gpt2":
        raise ValueError("tokenizer.ggml.model is not gpt2 (byte-level BPE)")
    tokens = field(reader, "tokenizer.ggml.tokens")
    types = field(reader, "tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ", 1)) for m in field(reader, "tokenizer.ggml.merges")]
    tok = Tokenizer(BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    # GGUF pre-tokenizer "smollm": digits split one by one, then the GPT-2 byte-level regex.
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]
    )
    tok.decoder = decoders.ByteLevel()
    # Control tokens (GGUF token_type 3) such as <|im_start|> are matched whole in the text.
    tok.add_special_tokens([t for t, ty in zip(tokens, types) if ty == 3])
    return tok


def top_k(logits: np.ndarray, k: int) -> list[list]:
    idx = np.argsort(-logits, kind="stable")[:k]
    return [[int(i), float(logits[i])] for i in idx]


def b64_f32(logits: np.ndarray) -> str:
    return base64.b64encode(logits.astype("<f4").tobytes()).decode("ascii")


def greedy(model: Model, prompt: list[int], steps: int) -> tuple[list[int], np.ndarray]:
    """Greedy continuation ids and the logits of the whole final sequence (prompt + steps - 1)."""
    seq = list(prompt)
    out = []
    for _ in range(steps):
        nxt = int(np.argmax(model.forward(seq)[-1]))
        out.append(nxt)
        seq.append(nxt)
    # Causal attention: the logits at every position of one pass over the sequence equal the
    # logits each greedy step saw.
    return out, model.forward(seq[:-1])


def compact_json(value, indent: str = "") -> str:
    """Indented JSON whose innermost lists stay on one line, so the fixture reads like a table."""
    if isinstance(value, dict):
        inner = indent + "  "
        items = [f"{inner}{json.dumps(k)}: {compact_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        inner = indent + "  "
        return "[\n" + ",\n".join(inner + compact_json(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value)


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cmd_tokenize(args) -> None:
    tok = tokenizer(GGUFReader(args.gguf))
    print(json.dumps([tok.encode(t).ids for t in args.text]))


def cmd_run(args) -> None:
    model = Model(args.gguf)
    with open(args.tokens) as f:
        seqs = json.load(f)
    result = []
    for seq in seqs:
        logits = model.forward(seq)
        result.append(
            {
                "tokens": seq,
                "positions": [
                    {"pos": p, "argmax": int(np.argmax(row)), "top": top_k(row, args.top_k), "logits_f32le_b64": b64_f32(row)}
                    for p, row in enumerate(logits)
                ],
            }
        )
    with open(args.out, "w") as f:
        json.dump({"gguf_sha256": sha256(args.gguf), "sequences": result}, f)


def cmd_fixture(args) -> None:
    started = time.monotonic()
    model = Model(args.gguf)
    tok = tokenizer(model.reader)
    prompts = []
    for name, text, chat in FIXTURE_PROMPTS:
        ids = tok.encode(text).ids
        cont, logits = greedy(model, ids, GREEDY_TOKENS)
        steps = logits[len(ids) - 1 :]
        prompts.append(
            {
                "name": name,
                "text": text,
                "chatml": chat,
                "prompt_ids": ids,
                "greedy_ids": cont,
                "greedy_text": tok.decode(cont),
                # Per greedy step (the last prompt position, then each generated one): the top-k
                # ids and their logits, best first.
                "steps": [
                    {"top_ids": [i for i, _ in top_k(row, TOP_K)], "top_logits": [v for _, v in top_k(row, TOP_K)]}
                    for row in steps
                ],
            }
        )
        print(f"{name}: {ids} -> {cont} {tok.decode(cont)!r}", file=sys.stderr)
    ids = tok.encode(PERPLEXITY_TEXT).ids
    logits = model.forward(ids)
    z = logits[:-1] - logits[:-1].max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    nll = -logp[np.arange(len(ids) - 1), ids[1:]]
    ppl = float(np.exp(nll.mean()))
    print(f"perplexity of {PERPLEXITY_TEXT!r}: {ppl:.3f}", file=sys.stderr)
    fixture = {
        "about": "Greedy continuations and top-k logits of SmolLM2-135M-Instruct Q4_1 from an independent float64 "
        "numpy reference (redline/tests/reference/llama_f64.py); no BOS is prepended "
        "(tokenizer.ggml.add_bos_token = false).",
        "command": args.command_line,
        "gguf": "GGUF is the file `redline pull smollm2-135m` prints (its SHA-256 below)",
        "gguf_sha256": sha256(args.gguf),
        "greedy_tokens": GREEDY_TOKENS,
        "top_k": TOP_K,
        "prompts": prompts,
        "perplexity": {"text": PERPLEXITY_TEXT, "ids": ids, "value": ppl},
        "run_seconds": round(time.monotonic() - started, 1),
        "environment": {"numpy": np.__version__, "python": sys.version.split()[0]},
    }
    with open(args.out, "w") as f:
        f.write(compact_json(fixture))
        f.write("\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tokenize")
    t.add_argument("gguf")
    t.add_argument("text", nargs="+")
    r = sub.add_parser("run")
    r.add_argument("gguf")
    r.add_argument("tokens")
    r.add_argument("out")
    r.add_argument("--top-k", type=int, default=TOP_K)
    f = sub.add_parser("fixture")
    f.add_argument("gguf")
    f.add_argument("out")
    args = p.parse_args()
    # The GGUF path is machine-specific; the command names it as $GGUF.
    argv = ["$GGUF" if a == getattr(args, "gguf", None) else a for a in sys.argv[1:]]
    args.command_line = "python3 redline/tests/reference/llama_f64.py " + " ".join(argv)
    {"tokenize": cmd_tokenize, "run": cmd_run, "fixture": cmd_fixture}[args.cmd](args)


if __name__ == "__main__":
    main()
