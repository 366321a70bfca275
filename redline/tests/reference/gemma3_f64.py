#!/usr/bin/env python3
"""An independent float64 reference of a gemma3-architecture GGUF model (Gemma 3 270M).

It shares nothing with the Rust engine: the GGUF file is read by llama.cpp's own `gguf` package,
weights are dequantized by `gguf.quants.dequantize` (float32 values, widened to float64), and every
operation after that runs in numpy float64. Its purpose is to give Rust tests numbers that were not
produced by the code under test. Token ids come from llama.cpp's own SentencePiece tokenizer (through
`llama-cpp-python`, only when the fixture is written); the fixture stores them, so `run` and every
test take ids and need no tokenizer.

Facts the forward pass relies on (checked against llama.cpp's `src/models/gemma3.cpp`,
`src/llama-model.cpp`, `src/llama-hparams.cpp`, `src/llama-graph.cpp` and `convert_hf_to_gguf.py`):
- The token embedding is scaled by sqrt(n_embd) before the first layer (`gemma3.cpp`:
  `ggml_scale(inpL, sqrtf(n_embd))` for token input).
- Each layer is
      h   = x + post_attention_norm(attention(attn_norm(x)))
      out = h + post_ffw_norm(ffn(ffn_norm(h)))
  with RMSNorm x / sqrt(mean(x^2) + eps) * w, eps = `gemma3.attention.layer_norm_rms_epsilon`,
  for all four norms (`gemma3.cpp`: attn_norm, attn_post_norm, ffn_norm, ffn_post_norm, all
  LLM_NORM_RMS), then `output_norm` before the logits.
- The GGUF norm weights are plain multipliers: HF Gemma3RMSNorm computes x_norm * (1 + w), and
  `convert_hf_to_gguf.py` (Gemma3Model: `norm_shift = 1.0`, added to every tensor whose name ends
  in `norm.weight`, q_norm and k_norm included) stores 1 + w; llama.cpp's `build_norm` multiplies by
  the stored tensor. (In this file some post norms hold exact 0.0: HF weight -1.)
- Q and K are RMS-normalised per head over head_dim with their own weights (`attn_q_norm`,
  `attn_k_norm`, same eps) before RoPE; V is not normalised.
- RoPE is NEOX style (`llama_model_rope_type`: LLM_ARCH_GEMMA3 is in the "pairs of head values are
  offset by n_rot/2" group): the pair (x[i], x[i + d/2]) of each head is rotated by
  pos * base^(-2i/d), d = n_rot = `gemma3.rope.dimension_count`, defaulting to key_length (256;
  the key is absent here).
- The base depends on the layer (`llama_model::get_rope_freq_base`): sliding layers use
  `rope_freq_base_train_swa` = 10000 with scale 1 (hard-coded in the LLM_ARCH_GEMMA3 hparams),
  global layers `gemma3.rope.freq_base` (1e6 here). Linear rope scaling, when the metadata has it,
  applies to the global layers only (the converter writes it from HF `rope_scaling`, llama.cpp's
  per-layer scale is 1 on sliding layers); this file has none.
- Q is multiplied by f_attention_scale = 1/sqrt(key_length) (1/16) after RoPE and the attention
  itself uses scale 1 (`gemma3.cpp`: `ggml_scale(Qcur, f_attention_scale)`, `build_attn(..., 1.0f)`);
  the 27B size (62 layers) uses 1/sqrt(n_embd / n_head) instead. No attention logit softcapping.
- Grouped-query attention: query head h reads kv head h // (n_head / n_head_kv) (here 4 query
  heads share the single kv head). q/k/v have key_length/value_length (256) per head, so
  n_head * head_dim = 1024 != n_embd = 640.
- Sliding window: `set_swa_pattern(6)` with dense_first = false marks layer il sliding iff
  il % 6 < 5 (layers 5, 11, 17 of 18 are global); the window is `gemma3.attention.sliding_window`
  (512) and LLAMA_SWA_TYPE_STANDARD masks key position p0 for query position p1 iff
  p1 - p0 >= n_swa (`llama_hparams::is_masked_swa`), so position P attends to P' <= P with
  P - P' < window on sliding layers and to every P' <= P on global layers.
- FFN: `build_ffn(..., LLM_FFN_GELU, LLM_FFN_PAR)` gives down(gelu(gate(x)) * up(x))
  (`ggml_geglu_split(gate, up)`), and ggml's GELU is the tanh approximation
  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), evaluated here exactly in float64.
- No `output.weight` tensor: the logits use the token embedding (tied). No final logit softcapping:
  with a sliding window llama.cpp builds the iswa graph, which has none, and the metadata has no
  `gemma3.final_logit_softcapping` key (both checked; the script refuses files that have one).
- BOS (id 2) is prepended (`tokenizer.ggml.add_bos_token = true`); the SentencePiece vocab has
  `add_space_prefix = false`.

llama.cpp's own greedy tokens are recorded beside the reference (the fixture's `llama_cpp` field).
They agree except around near-tied steps: llama.cpp quantizes activations to 8 bits per block
before every quantized matmul and keeps K and V in f16, and this model's residual stream has
outlier dimensions, so its logits sit a few tenths away from the float64 ones.

Subcommands:
  tokenize GGUF TEXT...            token ids of each TEXT with BOS, from llama.cpp's tokenizer
                                   (needs llama-cpp-python)
  run GGUF TOKENS.json OUT.json    logits of every position of every sequence in TOKENS.json
                                   (a JSON list of token-id lists) as float32 little-endian base64,
                                   plus argmax and top-k (--last: only the last position)
  fixture GGUF OUT.json            greedy continuations of the fixture prompts with the top-k logits
                                   of every step, llama.cpp's greedy tokens beside them (needs
                                   llama-cpp-python; writes the test fixture)
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

GREEDY_TOKENS = 24
LONG_GREEDY_TOKENS = 8
TOP_K = 5
FIXTURE_PROMPTS = [
    ("france", "The capital of France is"),
    ("once", "Once upon a time"),
    ("code", "def fibonacci(n):\n"),
]
# The long prompt must be longer than the sliding window (512) so that the sliding layers mask keys.
LONG_MIN_TOKENS = 600
# llama.cpp's hard-coded Gemma 3 facts (see the docstring).
SWA_PATTERN = 6
ROPE_BASE_SWA = 10000.0


def long_prompt_text() -> str:
    """A deterministic text of more than LONG_MIN_TOKENS tokens: a numbered inventory whose
    entries are generated from their index (period 8), ending mid-entry so that the continuation
    is determined by an entry 8 lines back."""
    colours = ["red", "blue", "green", "yellow", "white", "black", "orange", "purple"]
    things = ["box", "chair", "lamp", "book", "cup", "key", "coat", "plate"]
    lines = ["Inventory of the storage room, one item per line.\n"]
    for i in range(1, 76):
        lines.append(f"{i}. a {colours[i % 8]} {things[(3 * i) % 8]}, shelf {i % 5 + 1}\n")
    # Entry 76 repeats entry 68's colour and thing: " white cup, shelf 2".
    lines.append("76. a")
    return "".join(lines)


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
        if arch != "gemma3":
            raise ValueError(f"general.architecture is {arch!r}, this reference is for 'gemma3'")
        p = "gemma3."
        self.n_layer = int(field(reader, p + "block_count"))
        self.n_embd = int(field(reader, p + "embedding_length"))
        self.n_head = int(field(reader, p + "attention.head_count"))
        self.n_head_kv = int(field(reader, p + "attention.head_count_kv"))
        self.head_dim = int(field(reader, p + "attention.key_length"))
        value_length = int(field(reader, p + "attention.value_length"))
        if value_length != self.head_dim:
            raise ValueError(f"value_length {value_length} != key_length {self.head_dim}")
        self.eps = float(field(reader, p + "attention.layer_norm_rms_epsilon"))
        self.n_swa = int(field(reader, p + "attention.sliding_window"))
        if self.n_swa <= 0:
            raise ValueError("sliding_window <= 0: llama.cpp builds the non-SWA graph (with softcapping)")
        rope_dims = int(field(reader, p + "rope.dimension_count", self.head_dim))
        if rope_dims != self.head_dim:
            raise ValueError(f"rope.dimension_count {rope_dims} != head_dim {self.head_dim} (partial RoPE unsupported)")
        self.rope_base_global = float(field(reader, p + "rope.freq_base"))
        scaling = field(reader, p + "rope.scaling.type", "none")
        self.rope_scale_global = 1.0
        if scaling == "linear":
            self.rope_scale_global = 1.0 / float(field(reader, p + "rope.scaling.factor"))
        elif scaling != "none":
            raise ValueError(f"rope.scaling.type {scaling!r} unsupported")
        for key in ("final_logit_softcapping", "attn_logit_softcapping"):
            if p + key in reader.fields:
                raise ValueError(f"{p + key} present: this reference assumes no softcapping")
        if self.n_layer == 62:  # the 27B size: llama.cpp's f_attention_scale rule
            self.q_scale = 1.0 / math.sqrt(self.n_embd / self.n_head)
        else:
            self.q_scale = 1.0 / math.sqrt(self.head_dim)
        self.sliding = [il % SWA_PATTERN < SWA_PATTERN - 1 for il in range(self.n_layer)]
        self.tensors = {t.name: t for t in reader.tensors}
        self.w = {}
        for name, t in self.tensors.items():
            # numpy shape is the GGUF shape reversed: (rows = out features, cols = in features).
            self.w[name] = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float64)
        if "output.weight" in self.w:
            raise ValueError("output.weight present: this reference assumes tied embeddings")

    def rms_norm(self, x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * weight

    def rope(self, x: np.ndarray, positions: np.ndarray, layer: int) -> np.ndarray:
        """x: (T, heads, head_dim); GGML NEOX mode: x[i] pairs with x[i + head_dim/2]."""
        if self.sliding[layer]:
            base, scale = ROPE_BASE_SWA, 1.0
        else:
            base, scale = self.rope_base_global, self.rope_scale_global
        half = self.head_dim // 2
        inv = base ** (-2.0 * np.arange(half, dtype=np.float64) / self.head_dim)
        angle = (positions[:, None].astype(np.float64) * scale) * inv[None, :]  # (T, half)
        cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
        x0, x1 = x[..., :half], x[..., half:]
        return np.concatenate([x0 * cos - x1 * sin, x0 * sin + x1 * cos], axis=-1)

    def attention(self, layer: int, h: np.ndarray, positions: np.ndarray, full: bool) -> np.ndarray:
        T, hd = h.shape[0], self.head_dim
        w = lambda n: self.w[f"blk.{layer}.{n}.weight"]  # noqa: E731
        q = (h @ w("attn_q").T).reshape(T, self.n_head, hd)
        k = (h @ w("attn_k").T).reshape(T, self.n_head_kv, hd)
        v = (h @ w("attn_v").T).reshape(T, self.n_head_kv, hd)
        q = self.rope(self.rms_norm(q, w("attn_q_norm")), positions, layer) * self.q_scale
        k = self.rope(self.rms_norm(k, w("attn_k_norm")), positions, layer)
        # masked[i, j]: query position i does not attend to key position j.
        diff = positions[:, None] - positions[None, :]
        masked = diff < 0
        if self.sliding[layer] and not full:
            masked |= diff >= self.n_swa
        group = self.n_head // self.n_head_kv
        out = np.empty((T, self.n_head, hd))
        for head in range(self.n_head):
            kv = head // group
            scores = q[:, head, :] @ k[:, kv, :].T
            scores[masked] = -np.inf
            scores -= scores.max(axis=-1, keepdims=True)
            p = np.exp(scores)
            p /= p.sum(axis=-1, keepdims=True)
            out[:, head, :] = p @ v[:, kv, :]
        return out.reshape(T, self.n_head * hd) @ w("attn_output").T

    def ffn(self, layer: int, h: np.ndarray) -> np.ndarray:
        w = lambda n: self.w[f"blk.{layer}.{n}.weight"]  # noqa: E731
        gate, up = h @ w("ffn_gate").T, h @ w("ffn_up").T
        gelu = 0.5 * gate * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (gate + 0.044715 * gate**3)))
        return (gelu * up) @ w("ffn_down").T

    def forward(self, tokens: list[int], rows: list[int] | None = None, full: bool = False) -> np.ndarray:
        """Logits (len(rows), vocab) at the given positions (all when None), float64, from one causal
        pass over `tokens`. `full` disables the sliding window (a deliberately wrong model, used
        only to show that a prompt exercises the window)."""
        embd = self.w["token_embd.weight"]
        vocab = embd.shape[0]
        for i, t in enumerate(tokens):
            if not 0 <= t < vocab:
                raise ValueError(f"token {t} at index {i} is outside the vocabulary (0..{vocab})")
        x = embd[np.asarray(tokens)] * math.sqrt(self.n_embd)
        positions = np.arange(len(tokens))
        for il in range(self.n_layer):
            w = lambda n: self.w[f"blk.{il}.{n}.weight"]  # noqa: E731
            a = self.attention(il, self.rms_norm(x, w("attn_norm")), positions, full)
            x = x + self.rms_norm(a, w("post_attention_norm"))
            f = self.ffn(il, self.rms_norm(x, w("ffn_norm")))
            x = x + self.rms_norm(f, w("post_ffw_norm"))
        if rows is not None:
            x = x[np.asarray(rows)]
        return self.rms_norm(x, self.w["output_norm.weight"]) @ embd.T


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
    """llama.cpp through llama-cpp-python: its SentencePiece tokenizer and its own greedy decode
    (the established engine the reference is compared with; not needed by `run` or any test)."""

    def __init__(self, path: str, n_ctx: int):
        import llama_cpp

        self.llama_cpp = llama_cpp
        self.vocab = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        self.path, self.n_ctx = path, n_ctx

    def tokenize(self, text: str) -> list[int]:
        return self.vocab.tokenize(text.encode("utf-8"), add_bos=True, special=False)

    def detokenize(self, ids: list[int]) -> str:
        return self.vocab.detokenize(ids).decode("utf-8", errors="replace")

    def greedy(self, prompt: list[int], steps: int) -> tuple[list[int], list[float], list[float]]:
        """Greedy ids (argmax of llama.cpp's logits after each decode), the winning logits and the
        margins to the runner-up."""
        # A fresh context per prompt: nothing of an earlier prompt stays in the KV cache.
        m = self.llama_cpp.Llama(model_path=self.path, n_ctx=self.n_ctx, n_batch=self.n_ctx, n_threads=2, verbose=False)
        m.eval(prompt)
        out, logits, margins = [], [], []
        for _ in range(steps):
            row = np.ctypeslib.as_array(m._ctx.get_logits_ith(-1), shape=(m.n_vocab(),)).astype(np.float64)
            nxt = int(np.argmax(row))
            out.append(nxt)
            logits.append(float(row[nxt]))
            margins.append(float(row[nxt] - np.partition(row, -2)[-2]))
            m.eval([nxt])
        return out, logits, margins


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


def agreement(ours: list[int], theirs: list[int]) -> dict:
    first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
    return {"agree": sum(a == b for a, b in zip(ours, theirs)), "of": len(ours), "first_divergence": first}


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
    lc = LlamaCpp(args.gguf, n_ctx=1024)
    cases = [(name, text, GREEDY_TOKENS) for name, text in FIXTURE_PROMPTS]
    cases.append(("long", long_prompt_text(), LONG_GREEDY_TOKENS))
    prompts, llama = [], []
    for name, text, steps in cases:
        ids = lc.tokenize(text)
        if ids[0] != int(field(model.reader, "tokenizer.ggml.bos_token_id")):
            raise ValueError(f"{name}: llama.cpp's tokenizer did not prepend BOS")
        if name == "long" and len(ids) <= LONG_MIN_TOKENS:
            raise ValueError(f"long prompt has {len(ids)} tokens, fewer than {LONG_MIN_TOKENS}")
        t0 = time.monotonic()
        cont, rows = greedy(model, ids, steps)
        entry = {
            "name": name,
            "text": text,
            "prompt_ids": ids,
            "greedy_ids": cont,
            "greedy_text": lc.detokenize(cont),
            # Per greedy step (the last prompt position, then each generated one): the top-k ids
            # and their logits, best first.
            "steps": [step_record(row) for row in rows],
        }
        if name == "long":
            # The same first step with the window switched off (every layer global): how far a
            # model that ignores the sliding window lands from the reference.
            wrong = model.forward(ids, [len(ids) - 1], full=True)[0]
            top = entry["steps"][0]["top_ids"]
            entry["no_window_first_step"] = {
                "argmax": int(np.argmax(wrong)),
                "top_logits": [float(wrong[i]) for i in top],
                "max_abs_diff": float(np.max(np.abs(wrong[top] - rows[0][top]))),
            }
        prompts.append(entry)
        ref_s = time.monotonic() - t0
        theirs, their_logits, their_margins = lc.greedy(ids, steps)
        agree = agreement(cont, theirs)
        llama.append(
            {
                "name": name,
                "greedy_ids": theirs,
                "greedy_text": lc.detokenize(theirs),
                "greedy_logits": their_logits,
                "greedy_margins": their_margins,
                **agree,
            }
        )
        margins = [round(float(a - b), 3) for b, a in (np.partition(row, -2)[-2:] for row in rows)]
        print(
            f"{name}: {len(ids)} prompt ids, {ref_s:.1f} s\n  f64:      {cont} {lc.detokenize(cont)!r}\n"
            f"  llama.cpp: {theirs} {lc.detokenize(theirs)!r}\n  agreement {agree}\n  top1-top2 margins {margins}",
            file=sys.stderr,
        )
    import llama_cpp

    fixture = {
        "about": "Greedy continuations and top-k logits of Gemma 3 270M Q4_K_M from an independent float64 numpy "
        "reference (redline/tests/reference/gemma3_f64.py); prompt ids are llama.cpp's tokenization with "
        "BOS (tokenizer.ggml.add_bos_token = true). The last prompt is longer than the sliding window (512).",
        "command": args.command_line,
        "gguf": "GGUF is the file `redline pull gemma-3-270m` prints (its SHA-256 below)",
        "gguf_sha256": sha256(args.gguf),
        "greedy_tokens": GREEDY_TOKENS,
        "long_greedy_tokens": LONG_GREEDY_TOKENS,
        "top_k": TOP_K,
        "prompts": prompts,
        "llama_cpp": {
            "about": "llama.cpp's own greedy decode of the same prompt ids (argmax of its logits; it computes in "
            "float32 with quantized activations and an f16 KV cache), for comparison only: not the reference. "
            "greedy_logits is llama.cpp's logit of each token it chose and greedy_margins its lead over the "
            "runner-up; agree counts the positions where its token equals the reference's.",
            "llama_cpp_python": llama_cpp.__version__,
            "prompts": llama,
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
    args.command_line = "python3 redline/tests/reference/gemma3_f64.py " + " ".join(argv)
    {"tokenize": cmd_tokenize, "run": cmd_run, "fixture": cmd_fixture}[args.cmd](args)


if __name__ == "__main__":
    main()
