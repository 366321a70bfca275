#!/usr/bin/env python3
"""An independent float64 reference of a qwen35-architecture GGUF model (Qwen 3.5 dense).

It shares nothing with the Rust engine: the GGUF file is read by llama.cpp's own `gguf` package,
weights are dequantized by `gguf.quants.dequantize` (float32 values, widened to float64), and every
operation after that runs in numpy float64. Its purpose is to give Rust tests numbers that were not
produced by the code under test. Prompts are token ids (the fixture stores them).

Facts the forward pass relies on (checked against llama.cpp's `src/models/qwen35.cpp`,
`src/models/delta-net-base.cpp`, `src/models/models.h`, `src/llama-model.cpp`,
`src/llama-graph.cpp`, `ggml/src/ggml-cpu/ops.cpp` (`ssm_conv`, `rope` with
`ggml_mrope_cache_init`, `gated_delta_net`), `ggml/src/ggml-cpu/unary-ops.cpp` and the converter
`conversion/qwen.py`):
- Layer kinds: `qwen35.attention.recurrent_layers` (a bool per block) marks the gated-DeltaNet
  layers; without it layer l is one unless (l + 1) % `qwen35.full_attention_interval` == 0 (4 when
  absent). The last `qwen35.nextn_predict_layers` blocks (a prediction head) are not run.
- Every layer: x = x + block(RMSNorm(x) * attn_norm); x = x + ffn(RMSNorm(x) *
  post_attention_norm), ffn(h) = ffn_down(silu(ffn_gate h) * ffn_up h). RMSNorm is
  x / sqrt(mean(x^2) + eps) with eps = `qwen35.attention.layer_norm_rms_epsilon`; the stored norm
  weights already hold HF's 1 + w (the converter adds 1 to every `norm.weight` but the DeltaNet's
  `linear_attn.norm`). No embedding scale. Final RMSNorm * output_norm, then `output.weight` or the
  token embedding (tied).
- Full-attention block: `attn_q` has 2 * heads * head_dim rows, per head head_dim query rows then
  head_dim output-gate rows (qwen35.cpp views Qcur_full with stride 2 * head_dim, the gate at
  offset head_dim). Q and K are RMS-normed per head (attn_q_norm, attn_k_norm); RoPE (below); causal
  softmax attention with scale 1 / sqrt(head_dim), query head h reading kv head
  h // (heads / kv_heads); the result times sigmoid(gate); attn_output.
- RoPE: LLAMA_ROPE_TYPE_IMROPE with n_rot = `qwen35.rope.dimension_count` and sections
  `qwen35.rope.dimension_sections`; text tokens have the 4-D position (p, p, p, 0). Pair i < n_rot/2
  rotates head elements i and i + n_rot/2 (NEOX) by pos_s * base^(-2i/n_rot) where, with sector =
  i % sum(sections), s is t if sector % 3 == 0 and sector < 3*sections[0], h if sector % 3 == 1 and
  sector < 3*sections[1], w if sector % 3 == 2 and sector < 3*sections[2], else e (position 0: no
  rotation). Elements from n_rot on are not rotated.
- DeltaNet block: S = `ssm.state_size`, Hk = `ssm.group_count`, Hv = `ssm.time_step_rank`,
  K = `ssm.conv_kernel`. attn_qkv gives the Hk query heads, the Hk key heads and the Hv value heads
  (in that order), attn_gate z (Hv * S), ssm_beta and ssm_alpha (Hv each). Causal depthwise
  convolution over the qkv channels with `ssm_conv1d` ({K, channels}: channel c's taps, oldest
  input first), no bias, zero history at the start of a sequence, then SiLU. Query and key heads
  are L2-normalised, x / sqrt(sum(x^2) + eps) (llama.cpp: rms_norm(x, eps/S) / sqrt(S)). Value head
  h reads query/key head h % Hk. g = softplus(alpha + ssm_dt.bias) * ssm_a (ssm_a is stored as
  -exp(A_log)); softplus(v) = v if v > 20 else log(1 + exp(v)); beta = sigmoid(ssm_beta h). Per
  token and value head, with state M (S x S, M[i][j], i key, j value), zero at the start:
  M = exp(g) * M; kv = M^T k; delta = (v - kv) * beta; M = M + k delta^T; o = (M^T q) / sqrt(S)
  (ggml_gated_delta_net's order). Output: RMSNorm(o per head) * ssm_norm * silu(z), then ssm_out.

Subcommands:
  run GGUF TOKENS.json OUT.json    logits of every position of every sequence in TOKENS.json
                                   (a JSON list of token-id lists) as float32 little-endian base64,
                                   plus argmax and top-k
  fixture GGUF OUT.json            greedy continuations of the fixture prompts with the top-k logits
                                   of every step; when llama-cpp-python imports, llama.cpp's logits
                                   of the same sequences beside them
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


def fixture_prompts() -> list[tuple[str, list[int]]]:
    """Token-id prompts of the tiny model's vocabulary (ids 3..258 are the 256 bytes): a short one
    (six ids: the conv window fills at the third) and one of 150 ids, longer than a prefill pass
    (128 tokens), so that the state must carry from one pass to the next."""
    hello = [1] + [3 + b for b in b"Hello"]
    text = b"Once upon a time the cat sat on the mat, and the dog sat in the fog; " * 3
    long = [1] + [3 + b for b in text[:149]]
    return [("hello", hello), ("long", long)]


def field(reader: GGUFReader, key: str, default=None):
    f = reader.fields.get(key)
    if f is None:
        if default is not None:
            return default
        raise KeyError(f"GGUF metadata key {key!r} is missing")
    return f.contents()


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x: np.ndarray) -> np.ndarray:
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


class Model:
    def __init__(self, path: str):
        self.reader = reader = GGUFReader(path)
        arch = field(reader, "general.architecture")
        if arch != "qwen35":
            raise ValueError(f"general.architecture is {arch!r}, this reference is for 'qwen35'")
        p = "qwen35."
        blocks = int(field(reader, p + "block_count"))
        self.n_layer = blocks - int(field(reader, p + "nextn_predict_layers", 0))
        self.n_embd = int(field(reader, p + "embedding_length"))
        self.n_head = int(field(reader, p + "attention.head_count"))
        self.n_head_kv = int(field(reader, p + "attention.head_count_kv"))
        self.head_dim = int(field(reader, p + "attention.key_length"))
        if int(field(reader, p + "attention.value_length")) != self.head_dim:
            raise ValueError("value_length != key_length")
        self.eps = float(field(reader, p + "attention.layer_norm_rms_epsilon"))
        self.n_rot = int(field(reader, p + "rope.dimension_count"))
        self.sections = [int(s) for s in field(reader, p + "rope.dimension_sections")]
        self.rope_base = float(field(reader, p + "rope.freq_base"))
        if p + "rope.scaling.type" in reader.fields:
            raise ValueError("rope scaling present: this reference assumes none")
        self.d_conv = int(field(reader, p + "ssm.conv_kernel"))
        self.s = int(field(reader, p + "ssm.state_size"))
        self.hk = int(field(reader, p + "ssm.group_count"))
        self.hv = int(field(reader, p + "ssm.time_step_rank"))
        if int(field(reader, p + "ssm.inner_size")) != self.s * self.hv:
            raise ValueError("ssm.inner_size != state_size * time_step_rank")
        if p + "attention.recurrent_layers" in reader.fields:
            flags = field(reader, p + "attention.recurrent_layers")
            self.recurrent = [bool(flags[i]) for i in range(self.n_layer)]
        else:
            interval = int(field(reader, p + "full_attention_interval", 4))
            self.recurrent = [(i + 1) % interval != 0 for i in range(self.n_layer)]
        self.w = {}
        for t in reader.tensors:
            if t.name.startswith("blk.") and int(t.name.split(".")[1]) >= self.n_layer:
                continue
            # numpy shape is the GGUF shape reversed: (rows = out features, cols = in features).
            self.w[t.name] = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float64)
        self.output = self.w.get("output.weight", self.w["token_embd.weight"])
        # The rotation of pair i: its angle per unit position (0 for a pair in the fourth section).
        half = self.n_rot // 2
        total = sum(self.sections)
        sector = np.arange(half) % total
        moves = (
            ((sector % 3 == 0) & (sector < 3 * self.sections[0]))
            | ((sector % 3 == 1) & (sector < 3 * self.sections[1]))
            | ((sector % 3 == 2) & (sector < 3 * self.sections[2]))
        )
        self.rope_freq = np.where(moves, self.rope_base ** (-2.0 * np.arange(half) / self.n_rot), 0.0)

    def rms_norm(self, x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * weight

    def l2_norm(self, x: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + self.eps)

    def rope(self, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """x: (T, heads, head_dim); the first n_rot elements rotate in NEOX pairs."""
        half = self.n_rot // 2
        angle = positions[:, None].astype(np.float64) * self.rope_freq[None, :]
        cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
        x0, x1, rest = x[..., :half], x[..., half : 2 * half], x[..., 2 * half :]
        return np.concatenate([x0 * cos - x1 * sin, x0 * sin + x1 * cos, rest], axis=-1)

    def new_cache(self) -> dict:
        """A sequence's state: each full-attention layer's K and V rows, each DeltaNet layer's last
        d_conv - 1 convolution inputs and its Hv state matrices."""
        conv_dim = 2 * self.hk * self.s + self.hv * self.s
        cache = {}
        for il in range(self.n_layer):
            if self.recurrent[il]:
                cache[il] = {"conv": np.zeros((self.d_conv - 1, conv_dim)), "state": np.zeros((self.hv, self.s, self.s))}
            else:
                cache[il] = {"k": np.zeros((0, self.n_head_kv, self.head_dim)), "v": np.zeros((0, self.n_head_kv, self.head_dim))}
        return cache

    def attention(self, il: int, h: np.ndarray, positions: np.ndarray, cache: dict) -> np.ndarray:
        T, hd = h.shape[0], self.head_dim
        w = lambda n: self.w[f"blk.{il}.{n}.weight"]  # noqa: E731
        qg = (h @ w("attn_q").T).reshape(T, self.n_head, 2 * hd)
        q, gate = qg[..., :hd], qg[..., hd:]
        k = (h @ w("attn_k").T).reshape(T, self.n_head_kv, hd)
        v = (h @ w("attn_v").T).reshape(T, self.n_head_kv, hd)
        q = self.rope(self.rms_norm(q, w("attn_q_norm")), positions)
        k = self.rope(self.rms_norm(k, w("attn_k_norm")), positions)
        cache["k"] = np.concatenate([cache["k"], k])
        cache["v"] = np.concatenate([cache["v"], v])
        keys, values = cache["k"], cache["v"]
        key_pos = np.arange(keys.shape[0])
        masked = key_pos[None, :] > positions[:, None]
        group = self.n_head // self.n_head_kv
        out = np.empty((T, self.n_head, hd))
        for head in range(self.n_head):
            kv = head // group
            scores = (q[:, head, :] @ keys[:, kv, :].T) / math.sqrt(hd)
            scores[masked] = -np.inf
            scores -= scores.max(axis=-1, keepdims=True)
            p = np.exp(scores)
            p /= p.sum(axis=-1, keepdims=True)
            out[:, head, :] = p @ values[:, kv, :]
        out = out * sigmoid(gate)
        return out.reshape(T, self.n_head * hd) @ w("attn_output").T

    def delta_net(self, il: int, h: np.ndarray, cache: dict) -> np.ndarray:
        T, S, hk, hv = h.shape[0], self.s, self.hk, self.hv
        w = lambda n: self.w[f"blk.{il}.{n}"]  # noqa: E731
        qkv = h @ w("attn_qkv.weight").T
        z = (h @ w("attn_gate.weight").T).reshape(T, hv, S)
        beta = sigmoid(h @ w("ssm_beta.weight").T)
        alpha = h @ w("ssm_alpha.weight").T
        decay = np.exp(softplus(alpha + w("ssm_dt.bias")) * w("ssm_a"))
        taps = w("ssm_conv1d.weight")  # (channels, d_conv)
        window = np.concatenate([cache["conv"], qkv])  # (d_conv - 1 + T, channels)
        conv = np.stack([np.sum(window[t : t + self.d_conv] * taps.T, axis=0) for t in range(T)])
        cache["conv"] = window[T:]
        conv = silu(conv)
        q = self.l2_norm(conv[:, : hk * S].reshape(T, hk, S))
        k = self.l2_norm(conv[:, hk * S : 2 * hk * S].reshape(T, hk, S))
        v = conv[:, 2 * hk * S :].reshape(T, hv, S)
        state = cache["state"]
        out = np.empty((T, hv, S))
        for t in range(T):
            for head in range(hv):
                kh = head % hk
                m = state[head] * decay[t, head]
                kv = m.T @ k[t, kh]
                delta = (v[t, head] - kv) * beta[t, head]
                m = m + np.outer(k[t, kh], delta)
                state[head] = m
                out[t, head] = (m.T @ q[t, kh]) / math.sqrt(S)
        out = self.rms_norm(out, w("ssm_norm.weight")) * silu(z)
        return out.reshape(T, hv * S) @ w("ssm_out.weight").T

    def ffn(self, il: int, h: np.ndarray) -> np.ndarray:
        w = lambda n: self.w[f"blk.{il}.{n}.weight"]  # noqa: E731
        return (silu(h @ w("ffn_gate").T) * (h @ w("ffn_up").T)) @ w("ffn_down").T

    def forward(self, tokens: list[int], first: int, cache: dict) -> np.ndarray:
        """Logits (len(tokens), vocab), float64, of the tokens at positions first.. after the
        sequence `cache` holds; advances `cache`."""
        embd = self.w["token_embd.weight"]
        vocab = embd.shape[0]
        for i, t in enumerate(tokens):
            if not 0 <= t < vocab:
                raise ValueError(f"token {t} at index {i} is outside the vocabulary (0..{vocab})")
        x = embd[np.asarray(tokens)]
        positions = np.arange(first, first + len(tokens))
        for il in range(self.n_layer):
            h = self.rms_norm(x, self.w[f"blk.{il}.attn_norm.weight"])
            if self.recurrent[il]:
                x = x + self.delta_net(il, h, cache[il])
            else:
                x = x + self.attention(il, h, positions, cache[il])
            x = x + self.ffn(il, self.rms_norm(x, self.w[f"blk.{il}.post_attention_norm.weight"]))
        return self.rms_norm(x, self.w["output_norm.weight"]) @ self.output.T


def top_k(logits: np.ndarray, k: int) -> list[list]:
    idx = np.argsort(-logits, kind="stable")[:k]
    return [[int(i), float(logits[i])] for i in idx]


def b64_f32(logits: np.ndarray) -> str:
    return base64.b64encode(logits.astype("<f4").tobytes()).decode("ascii")


def greedy(model: Model, prompt: list[int], steps: int) -> tuple[list[int], list[np.ndarray]]:
    """Greedy continuation ids and the full logits row each step chose from: the prompt in one
    pass, then one token per pass on the carried cache."""
    cache = model.new_cache()
    row = model.forward(prompt, 0, cache)[-1]
    out, rows = [], []
    for i in range(steps):
        nxt = int(np.argmax(row))
        out.append(nxt)
        rows.append(row)
        if i + 1 < steps:
            row = model.forward([nxt], len(prompt) + i, cache)[-1]
    return out, rows


def step_record(row: np.ndarray) -> dict:
    top = top_k(row, TOP_K)
    return {"top_ids": [i for i, _ in top], "top_logits": [v for _, v in top]}


def llama_cpp_logits(path: str, sequence: list[int]) -> np.ndarray | None:
    """llama.cpp's logits of every position of `sequence` (one batch), or None without
    llama-cpp-python."""
    try:
        import llama_cpp
    except ImportError:
        return None
    m = llama_cpp.Llama(model_path=path, n_ctx=512, n_batch=512, logits_all=True, n_threads=2, verbose=False)
    m.eval(sequence)
    return np.array(m.scores[: len(sequence)], dtype=np.float64)


def f32_copy(path: str, out: str) -> None:
    """The GGUF at `path` with every tensor dequantized to F32 (the same values; metadata kept):
    llama.cpp then multiplies without quantizing activations to 8 bits, so its logits show how
    close it is to the reference when only its f32 arithmetic (and f16 KV cache) differs."""
    from gguf import GGUFValueType, GGUFWriter

    reader = GGUFReader(path)
    writer = GGUFWriter(out, arch=field(reader, "general.architecture"))
    for key, f in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        if f.types[0] == GGUFValueType.ARRAY:
            writer.add_key_value(key, f.contents(), f.types[0], sub_type=f.types[-1])
        else:
            writer.add_key_value(key, f.contents(), f.types[0])
    for t in reader.tensors:
        writer.add_tensor(t.name, np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def compare_llama_cpp(path: str, ids: list[int], cont: list[int], steps: list[dict]) -> dict | None:
    """llama.cpp's logits of the prompt and the reference's greedy tokens against the reference's
    top-k logits at every step: the largest difference and at how many steps llama.cpp's argmax is
    the reference's token."""
    theirs = llama_cpp_logits(path, ids + cont[:-1])
    if theirs is None:
        return None
    theirs = theirs[len(ids) - 1 :]
    diffs = [float(np.max(np.abs(t[r["top_ids"]] - np.array(r["top_logits"])))) for t, r in zip(theirs, steps)]
    agree = sum(int(np.argmax(t)) == c for t, c in zip(theirs, cont))
    return {"max_abs_diff_top_logits": max(diffs), "argmax_agree": agree, "of": len(cont)}


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


def cmd_run(args) -> None:
    model = Model(args.gguf)
    with open(args.tokens) as f:
        seqs = json.load(f)
    result = []
    for seq in seqs:
        logits = model.forward(seq, 0, model.new_cache())
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
    prompts, llama = [], []
    for name, ids in fixture_prompts():
        cont, rows = greedy(model, ids, GREEDY_TOKENS)
        # The carried cache against one pass over the whole sequence: the same logits.
        whole = model.forward(ids + cont[:-1], 0, model.new_cache())[len(ids) - 1 :]
        drift = float(np.max(np.abs(whole - np.array(rows))))
        if drift > 1e-9:
            raise ValueError(f"{name}: step-by-step and one-pass logits differ by {drift}")
        margins = [float(a - b) for b, a in (np.partition(row, -2)[-2:] for row in rows)]
        prompts.append(
            {
                "name": name,
                "prompt_ids": ids,
                "greedy_ids": cont,
                "min_margin": min(margins),
                # Per greedy step (the last prompt position, then each generated one): the top-k ids
                # and their logits, best first.
                "steps": [step_record(row) for row in rows],
            }
        )
        quantized = compare_llama_cpp(args.gguf, ids, cont, prompts[-1]["steps"])
        if quantized is not None:
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                f32_copy(args.gguf, f"{tmp}/f32.gguf")
                unquantized = compare_llama_cpp(f"{tmp}/f32.gguf", ids, cont, prompts[-1]["steps"])
            llama.append({"name": name, "file": quantized, "f32_copy": unquantized})
        print(f"{name}: {len(ids)} prompt ids, greedy {cont}, min margin {min(margins):.4f}, {llama[-1:]}", file=sys.stderr)
    fixture = {
        "about": "Greedy continuations and top-k logits of the tiny qwen35 model (gguf::tiny_qwen35 with "
        "TinyQwen35Config::default(), Redline's built-in tiny-qwen35) from an independent float64 numpy "
        "reference (redline/tests/reference/qwen35_f64.py); prompts are token ids.",
        "command": args.command_line,
        "gguf": "GGUF is the file `redline models write-tiny --model tiny-qwen35` writes (its SHA-256 below)",
        "gguf_sha256": sha256(args.gguf),
        "greedy_tokens": GREEDY_TOKENS,
        "top_k": TOP_K,
        "prompts": prompts,
        "llama_cpp": {
            "about": "llama.cpp's logits of the same sequences (prompt and the reference's greedy tokens in one "
            "batch, through llama-cpp-python), for comparison only: the largest difference from the "
            "reference's top-k logits over the steps, and at how many steps its argmax is the reference's "
            "token; `file` for the GGUF itself (llama.cpp quantizes activations to 8 bits before every "
            "quantized matmul), `f32_copy` for the same weights dequantized to F32 (only llama.cpp's f32 "
            "arithmetic and f16 KV cache differ). Empty when llama-cpp-python was not installed.",
            "llama_cpp_python": _version("llama_cpp_python") if llama else None,
            "prompts": llama,
        },
        "run_seconds": round(time.monotonic() - started, 1),
        "environment": {"numpy": np.__version__, "gguf": _version("gguf"), "python": sys.version.split()[0]},
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
    args.command_line = "python3 redline/tests/reference/qwen35_f64.py " + " ".join(argv)
    {"run": cmd_run, "fixture": cmd_fixture}[args.cmd](args)


if __name__ == "__main__":
    main()
