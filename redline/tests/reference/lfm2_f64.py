#!/usr/bin/env python3
"""An independent float64 reference of an lfm2-architecture GGUF model (LiquidAI LFM2).

It shares nothing with the Rust engine: the GGUF file is read by llama.cpp's own `gguf` package,
weights are dequantized by `gguf.quants.dequantize` (float32 values, widened to float64), and every
operation after that runs in numpy float64. Its purpose is to give Rust tests numbers that were not
produced by the code under test. Token ids come from llama.cpp's own tokenizer (through
`llama-cpp-python`, only when the fixture is written); the fixture stores them, so `run` and every
test take ids and need no tokenizer.

Facts the forward pass relies on (checked against llama.cpp's `src/models/lfm2.cpp` (the graph and,
in current llama.cpp, `load_arch_hparams`/`load_arch_tensors`), `src/llama-model.cpp`,
`src/llama-arch.cpp`, `ggml/src/ggml-cpu/ops.cpp` and `convert_hf_to_gguf.py`'s `LFM2Model`):
- Block kinds: `lfm2.attention.head_count_kv` holds one entry per block (an int32 array as the
  converter writes it); a block whose entry is 0 is a short-convolution block
  (`is_recr_impl[il] = n_head_kv(il) == 0`), the others attention blocks with that many KV heads.
- Every block: h = attn_norm(x) (HF `operator_norm`); x = x + mixer(h); x = x + ffn(ffn_norm(x)),
  RMSNorm x / sqrt(mean(x^2) + eps) * w with eps = `lfm2.attention.layer_norm_rms_epsilon` and the
  stored weight as the multiplier. The token embedding enters unscaled.
- Short-convolution mixer (`build_shortconv_block`): bcx = in_proj(h), `in_proj` {n_embd, 3 n_embd};
  B, C, x are its thirds in that order; Bx = B * x; a depthwise causal convolution of length
  L = `lfm2.shortconv.l_cache` over Bx: `ggml_ssm_conv` on the state (the previous L - 1 inputs,
  zeros at the start of a sequence) concatenated with the new input, out[t, c] =
  sum_k window[t + k, c] * w[c, k] with k = 0 the oldest input and k = L - 1 the current one; the
  tensor `shortconv.conv` has GGUF dims [L, n_embd] (HF conv.weight [n_embd, 1, L] squeezed), so
  numpy's (n_embd, L) row c is channel c's taps; y = C * conv; mixer output = out_proj(y).
- Attention mixer (`build_attn_block`): q, k, v projections; q and k RMS-normalised per head over
  the head size with `attn_q_norm` / `attn_k_norm` (same eps); NEOX RoPE (`llama_model_rope_type`:
  LLM_ARCH_LFM2 is in the NEOX group): the pair (x[i], x[i + d/2]) of each head rotated by
  pos * base^(-2i/d), d = the head size n_embd / n_head (no `rope.dimension_count` or
  `attention.key_length` is written), base `lfm2.rope.freq_base`; causal softmax attention with
  kq_scale 1/sqrt(head size); query head h reads kv head h // (n_head / n_head_kv); then
  `attn_output`. No sliding window unless `lfm2.attention.sliding_window` > 0 (refused here).
- FFN: `build_ffn(..., LLM_FFN_SILU, LLM_FFN_PAR)`: down(silu(gate(x)) * up(x)), silu(g) =
  g / (1 + exp(-g)).
- The final norm is `token_embd_norm.weight` (`LLM_TENSOR_OUTPUT_NORM_LFM2`; HF `embedding_norm`),
  applied after the last block; the logits use `output.weight`, or the token embedding when it is
  absent (tied: `TENSOR_DUPLICATED`).
- BOS (`<|startoftext|>`) is prepended by llama.cpp's tokenizer for `tokenizer.ggml.pre = "lfm2"`.

llama.cpp's own greedy decode of the same ids is recorded beside the reference (the fixture's
`llama_cpp` field) with how far its logits land from the reference's: it quantizes activations to 8
bits per block before every quantized matmul and keeps K and V in f16, so its logits differ in the
second or third decimal.

Subcommands:
  tokenize GGUF TEXT...            token ids of each TEXT with BOS, from llama.cpp's tokenizer
                                   (needs llama-cpp-python)
  run GGUF TOKENS.json OUT.json    logits of every position of every sequence in TOKENS.json
                                   (a JSON list of token-id lists) as float32 little-endian base64,
                                   plus argmax and top-k (--last: only the last position)
  fixture GGUF OUT.json            greedy continuations of the fixture prompts with the top-k logits
                                   of every step, llama.cpp's beside them (needs llama-cpp-python;
                                   writes the test fixture)
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

GREEDY_TOKENS = 32
TOP_K = 5
FIXTURE_PROMPTS = [
    ("france", "The capital of France is"),
    ("story", "Once upon a time, in a small town by the sea, there lived an old man who"),
]


def field(reader: GGUFReader, key: str, default=None):
    f = reader.fields.get(key)
    if f is None:
        if default is not None:
            return default
        raise KeyError(f"GGUF metadata key {key!r} is missing")
    return f.contents()


class Model:
    def __init__(self, path: str):
        self.reader = reader = GGUFReader(path)
        arch = field(reader, "general.architecture")
        if arch != "lfm2":
            raise ValueError(f"general.architecture is {arch!r}, this reference is for 'lfm2'")
        p = "lfm2."
        self.n_layer = int(field(reader, p + "block_count"))
        self.n_embd = int(field(reader, p + "embedding_length"))
        self.n_head = int(field(reader, p + "attention.head_count"))
        kv = field(reader, p + "attention.head_count_kv")
        self.n_head_kv = [int(n) for n in kv] if isinstance(kv, list) else [int(kv)] * self.n_layer
        if len(self.n_head_kv) != self.n_layer:
            raise ValueError(f"head_count_kv has {len(self.n_head_kv)} entries for {self.n_layer} blocks")
        self.head_dim = int(field(reader, p + "attention.key_length", self.n_embd // self.n_head))
        if self.head_dim * self.n_head != self.n_embd:
            raise ValueError("n_head * head_dim != n_embd")
        rope_dims = int(field(reader, p + "rope.dimension_count", self.head_dim))
        if rope_dims != self.head_dim:
            raise ValueError(f"rope.dimension_count {rope_dims} != head_dim {self.head_dim} (partial RoPE unsupported)")
        if int(field(reader, p + "attention.sliding_window", -1)) > 0:
            raise ValueError("sliding_window > 0: llama.cpp builds the iSWA graph, not modelled here")
        if p + "rope.scaling.type" in reader.fields:
            raise ValueError("scaled RoPE unsupported")
        self.eps = float(field(reader, p + "attention.layer_norm_rms_epsilon"))
        self.l_cache = int(field(reader, p + "shortconv.l_cache"))
        if self.l_cache < 2:
            raise ValueError("shortconv.l_cache < 2 (llama.cpp asserts l_cache > 1)")
        self.rope_base = float(field(reader, p + "rope.freq_base"))
        self.w = {}
        for t in reader.tensors:
            # numpy shape is the GGUF shape reversed: (rows = out features, cols = in features).
            self.w[t.name] = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float64)
        self.output = self.w.get("output.weight", self.w["token_embd.weight"])

    def rms_norm(self, x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * weight

    def rope(self, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """x: (T, heads, head_dim); GGML NEOX mode: x[i] pairs with x[i + head_dim/2]."""
        half = self.head_dim // 2
        inv = self.rope_base ** (-2.0 * np.arange(half, dtype=np.float64) / self.head_dim)
        angle = positions[:, None].astype(np.float64) * inv[None, :]  # (T, half)
        cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
        x0, x1 = x[..., :half], x[..., half:]
        return np.concatenate([x0 * cos - x1 * sin, x0 * sin + x1 * cos], axis=-1)

    def attention(self, layer: int, h: np.ndarray, positions: np.ndarray) -> np.ndarray:
        T, hd, n_kv = h.shape[0], self.head_dim, self.n_head_kv[layer]
        w = lambda n: self.w[f"blk.{layer}.{n}.weight"]  # noqa: E731
        q = (h @ w("attn_q").T).reshape(T, self.n_head, hd)
        k = (h @ w("attn_k").T).reshape(T, n_kv, hd)
        v = (h @ w("attn_v").T).reshape(T, n_kv, hd)
        q = self.rope(self.rms_norm(q, w("attn_q_norm")), positions)
        k = self.rope(self.rms_norm(k, w("attn_k_norm")), positions)
        masked = positions[:, None] < positions[None, :]
        group = self.n_head // n_kv
        out = np.empty((T, self.n_head, hd))
        for head in range(self.n_head):
            kv = head // group
            scores = (q[:, head, :] @ k[:, kv, :].T) / math.sqrt(hd)
            scores[masked] = -np.inf
            scores -= scores.max(axis=-1, keepdims=True)
            p = np.exp(scores)
            p /= p.sum(axis=-1, keepdims=True)
            out[:, head, :] = p @ v[:, kv, :]
        return out.reshape(T, self.n_head * hd) @ w("attn_output").T

    def shortconv(self, layer: int, h: np.ndarray) -> np.ndarray:
        T, d, L = h.shape[0], self.n_embd, self.l_cache
        w = lambda n: self.w[f"blk.{layer}.{n}.weight"]  # noqa: E731
        bcx = h @ w("shortconv.in_proj").T  # (T, 3d)
        b, c, x = bcx[:, :d], bcx[:, d : 2 * d], bcx[:, 2 * d :]
        taps = w("shortconv.conv")  # (d, L): channel c's taps, oldest first
        if taps.shape != (d, L):
            raise ValueError(f"shortconv.conv of block {layer} has shape {taps.shape}, expected {(d, L)}")
        padded = np.vstack([np.zeros((L - 1, d)), b * x])  # (L - 1 + T, d): zero history
        conv = np.zeros((T, d))
        for k in range(L):
            conv += padded[k : k + T] * taps[None, :, k]
        return (c * conv) @ w("shortconv.out_proj").T

    def ffn(self, layer: int, h: np.ndarray) -> np.ndarray:
        w = lambda n: self.w[f"blk.{layer}.{n}.weight"]  # noqa: E731
        gate, up = h @ w("ffn_gate").T, h @ w("ffn_up").T
        return (gate / (1.0 + np.exp(-gate)) * up) @ w("ffn_down").T

    def forward(self, tokens: list[int], rows: list[int] | None = None) -> np.ndarray:
        """Logits (len(rows), vocab) at the given positions (all when None), float64, from one causal
        pass over `tokens` from a fresh sequence (empty KV cache, zero convolution state)."""
        embd = self.w["token_embd.weight"]
        vocab = embd.shape[0]
        for i, t in enumerate(tokens):
            if not 0 <= t < vocab:
                raise ValueError(f"token {t} at index {i} is outside the vocabulary (0..{vocab})")
        x = embd[np.asarray(tokens)]
        positions = np.arange(len(tokens))
        for il in range(self.n_layer):
            h = self.rms_norm(x, self.w[f"blk.{il}.attn_norm.weight"])
            x = x + (self.attention(il, h, positions) if self.n_head_kv[il] else self.shortconv(il, h))
            x = x + self.ffn(il, self.rms_norm(x, self.w[f"blk.{il}.ffn_norm.weight"]))
        if rows is not None:
            x = x[np.asarray(rows)]
        return self.rms_norm(x, self.w["token_embd_norm.weight"]) @ self.output.T


def top_k(logits: np.ndarray, k: int) -> list[list]:
    idx = np.argsort(-logits, kind="stable")[:k]
    return [[int(i), float(logits[i])] for i in idx]


def b64_f32(logits: np.ndarray) -> str:
    return base64.b64encode(logits.astype("<f4").tobytes()).decode("ascii")


def greedy(model: Model, prompt: list[int], steps: int) -> tuple[list[int], list[np.ndarray]]:
    """Greedy continuation ids and the full logits row each step chose from."""
    seq = list(prompt)
    out, rows = [], []
    for _ in range(steps):
        row = model.forward(seq, [len(seq) - 1])[0]
        nxt = int(np.argmax(row))
        out.append(nxt)
        rows.append(row)
        seq.append(nxt)
    return out, rows


def step_record(row: np.ndarray) -> dict:
    top = top_k(row, TOP_K)
    return {"top_ids": [i for i, _ in top], "top_logits": [v for _, v in top]}


class LlamaCpp:
    """llama.cpp through llama-cpp-python: its tokenizer and its own greedy decode (the established
    engine the reference is compared with; not needed by `run` or any test)."""

    def __init__(self, path: str, n_ctx: int):
        import llama_cpp

        self.llama_cpp = llama_cpp
        self.vocab = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        self.path, self.n_ctx = path, n_ctx

    def tokenize(self, text: str) -> list[int]:
        return self.vocab.tokenize(text.encode("utf-8"), add_bos=True, special=False)

    def greedy(self, prompt: list[int], steps: int) -> tuple[list[int], list[np.ndarray]]:
        """Greedy ids (argmax of llama.cpp's logits after each decode) and the logits rows."""
        # A fresh context per prompt: nothing of an earlier prompt stays in the KV cache or the
        # convolution state.
        m = self.llama_cpp.Llama(model_path=self.path, n_ctx=self.n_ctx, n_batch=self.n_ctx, n_threads=2, verbose=False)
        m.eval(prompt)
        out, rows = [], []
        for _ in range(steps):
            row = np.ctypeslib.as_array(m._ctx.get_logits_ith(-1), shape=(m.n_vocab(),)).astype(np.float64)
            nxt = int(np.argmax(row))
            out.append(nxt)
            rows.append(row)
            m.eval([nxt])
        return out, rows


def f32_copy(path: str, out: str) -> None:
    """The GGUF at `path` rewritten by gguf-py with every tensor dequantized to F32 (metadata kept),
    so that llama.cpp runs the same weights without quantizing its activations."""
    from gguf import GGUFValueType, GGUFWriter

    reader = GGUFReader(path)
    writer = GGUFWriter(out, arch=field(reader, "general.architecture"))
    for name, f in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        kind = GGUFValueType(f.types[0])
        sub = GGUFValueType(f.types[1]) if kind == GGUFValueType.ARRAY else None
        writer.add_key_value(name, f.contents(), kind, sub_type=sub)
    for t in reader.tensors:
        writer.add_tensor(t.name, np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def llama_cpp_f32_agreement(model: Model, path: str, sequences: list[list[int]]) -> dict:
    """llama.cpp's logits at every position of each sequence, on the model's weights in F32, against
    the reference's: the largest absolute difference over every logit."""
    import tempfile

    import llama_cpp

    with tempfile.TemporaryDirectory() as tmp:
        copy = f"{tmp}/f32.gguf"
        f32_copy(path, copy)
        worst = 0.0
        for seq in sequences:
            m = llama_cpp.Llama(model_path=copy, n_ctx=256, n_batch=256, logits_all=True, n_threads=2, verbose=False)
            m.eval(seq)
            theirs = np.array(m.scores[: len(seq)], dtype=np.float64)
            worst = max(worst, float(np.max(np.abs(theirs - model.forward(seq)))))
            del m
    return {"positions": sum(len(s) for s in sequences), "max_abs_logit_diff": worst}


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
    lc = LlamaCpp(args.gguf, 0)
    print(json.dumps([lc.tokenize(t) for t in args.text]))


def cmd_run(args) -> None:
    model = Model(args.gguf)
    with open(args.tokens) as f:
        seqs = json.load(f)
    result = []
    for seq in seqs:
        rows = [len(seq) - 1] if args.last else list(range(len(seq)))
        logits = model.forward(seq, rows)
        result.append(
            {
                "tokens": seq,
                "positions": [
                    {"pos": p, "argmax": int(np.argmax(row)), "top": top_k(row, args.top_k), "logits_f32le_b64": b64_f32(row)}
                    for p, row in zip(rows, logits)
                ],
            }
        )
    with open(args.out, "w") as f:
        json.dump({"gguf_sha256": sha256(args.gguf), "sequences": result}, f)


def cmd_fixture(args) -> None:
    started = time.monotonic()
    model = Model(args.gguf)
    lc = LlamaCpp(args.gguf, n_ctx=256)
    prompts, llama = [], []
    for name, text in FIXTURE_PROMPTS:
        ids = lc.tokenize(text)
        if ids[0] != int(field(model.reader, "tokenizer.ggml.bos_token_id")):
            raise ValueError(f"{name}: llama.cpp's tokenizer did not prepend BOS")
        cont, rows = greedy(model, ids, GREEDY_TOKENS)
        prompts.append(
            {
                "name": name,
                "text": text,
                "prompt_ids": ids,
                "greedy_ids": cont,
                # Per greedy step (the last prompt position, then each generated one): the top-k
                # ids and their logits, best first.
                "steps": [step_record(row) for row in rows],
            }
        )
        theirs, their_rows = lc.greedy(ids, GREEDY_TOKENS)
        agree = sum(a == b for a, b in zip(cont, theirs))
        first = next((i for i, (a, b) in enumerate(zip(cont, theirs)) if a != b), None)
        # Where both decoded the same sequence, how far llama.cpp's logits are from the
        # reference's on the reference's top-k ids.
        same = first if first is not None else GREEDY_TOKENS
        diffs = [float(np.max(np.abs(their_rows[i][top] - rows[i][top]))) for i in range(same) for top in [np.argsort(-rows[i])[:TOP_K]]]
        llama.append(
            {
                "name": name,
                "greedy_ids": theirs,
                "agree": agree,
                "of": GREEDY_TOKENS,
                "first_divergence": first,
                "max_abs_top_logit_diff_before_divergence": max(diffs) if diffs else None,
            }
        )
        margins = [round(float(a - b), 3) for b, a in (np.partition(row, -2)[-2:] for row in rows)]
        print(
            f"{name}: {len(ids)} prompt ids\n  f64:       {cont}\n  llama.cpp: {theirs}\n"
            f"  agree {agree}/{GREEDY_TOKENS}, first divergence {first}, max |dlogit| {max(diffs) if diffs else None}\n"
            f"  top1-top2 margins {margins}",
            file=sys.stderr,
        )
    import llama_cpp

    f32 = llama_cpp_f32_agreement(model, args.gguf, [p["prompt_ids"] + p["greedy_ids"] for p in prompts])
    print(f"llama.cpp on F32 weights: {f32}", file=sys.stderr)
    fixture = {
        "about": "Greedy continuations and top-k logits of the tiny lfm2 model (gguf::tiny_lfm2 with its default "
        "configuration) from an independent float64 numpy reference (redline/tests/reference/lfm2_f64.py); prompt "
        "ids are llama.cpp's tokenization with BOS.",
        "command": args.command_line,
        "gguf": "GGUF is the file `cargo run -p gguf --example write_lfm2 -- tiny $GGUF` writes (its SHA-256 below)",
        "gguf_sha256": sha256(args.gguf),
        "greedy_tokens": GREEDY_TOKENS,
        "top_k": TOP_K,
        "prompts": prompts,
        "llama_cpp": {
            "about": "llama.cpp's own greedy decode of the same prompt ids (argmax of its logits; it computes in "
            "float32 with quantized activations and an f16 KV cache), for comparison only: not the reference. "
            "max_abs_top_logit_diff_before_divergence is the largest difference of its logits from the "
            "reference's on the reference's top-k ids over the steps before the first divergence.",
            "llama_cpp_python": llama_cpp.__version__,
            "prompts": llama,
            "f32_weights": {
                "about": "llama.cpp on the same model with every tensor dequantized to F32 by gguf-py (so it does "
                "not quantize its activations), every position of each prompt followed by its greedy "
                "continuation, in one batch: the largest absolute difference of any logit from the reference's.",
                **f32,
            },
        },
        "run_seconds": round(time.monotonic() - started, 1),
        "environment": {
            "numpy": np.__version__,
            "gguf": _version("gguf"),
            "python": sys.version.split()[0],
        },
    }
    with open(args.out, "w") as f:
        f.write(compact_json(fixture))
        f.write("\n")


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


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
    r.add_argument("--last", action="store_true", help="only the last position of each sequence")
    f = sub.add_parser("fixture")
    f.add_argument("gguf")
    f.add_argument("out")
    args = p.parse_args()
    # The GGUF path is machine-specific; the command names it as $GGUF.
    argv = ["$GGUF" if a == getattr(args, "gguf", None) else a for a in sys.argv[1:]]
    args.command_line = "python3 redline/tests/reference/lfm2_f64.py " + " ".join(argv)
    {"tokenize": cmd_tokenize, "run": cmd_run, "fixture": cmd_fixture}[args.cmd](args)


if __name__ == "__main__":
    main()
