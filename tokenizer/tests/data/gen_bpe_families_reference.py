#!/usr/bin/env python3
"""End-to-end reference for the lfm2 and qwen35 byte-level vocabularies, from llama.cpp's tokenizer.

For each family, builds a small byte-level BPE vocabulary in that family's shape, writes it as a
vocab-only GGUF, loads it with llama-cpp-python (vocab_only=True) and records what llama.cpp does
with it -> bpe_families_expected.json:

- the vocabulary itself (tokens, GGUF token types, merges, BOS/EOS ids), which the Rust test builds
  its tokenizer from (the GGUF is a temporary file);
- llama.cpp's `llama_tokenize(text, add_special, parse_special)` ids for every string of CORPUS and
  RANDOM_STRINGS seeded random mixtures, all four flag combinations;
- its `llama_token_to_piece(id, special)` bytes of every token, with `special` off and on;
- its end-of-generation set (`llama_vocab_is_eog` of every id) and `llama_vocab_get_add_bos` /
  `_add_eos` (no add_*_token key in the file: the defaults llama.cpp ties to the pre name).

The merges come from HF `tokenizers`' BpeTrainer on TRAINING text, pre-split with the family's own
regex; the vocabulary then gets tokens merges cannot reach (BAIT, for lfm2's ignore_merges) and the
family's special tokens (SPECIALS: control and user-defined as in the models' files, Qwen's normal
`</s>`, which llama.cpp makes a control token and an end of generation).

Usage: python gen_bpe_families_reference.py bpe_families_expected.json
(needs llama-cpp-python, gguf, numpy and tokenizers; see README.md beside this file for versions)
"""
import ctypes
import json
import os
import random
import sys
import tempfile

import gguf
import llama_cpp
import tokenizers
from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

HF_REGEX = {
    "lfm2": ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
             "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
    "qwen35": ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|"
               "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
}

CONTROL, USER_DEFINED, NORMAL = 3, 4, 1

# (text, GGUF token type), appended after the trained tokens, in the shape of each model's file.
SPECIALS = {
    "lfm2": [
        ("<|pad|>", CONTROL), ("<|startoftext|>", CONTROL), ("<|endoftext|>", CONTROL),
        ("<|fim_pre|>", CONTROL), ("<|fim_mid|>", CONTROL), ("<|fim_suf|>", CONTROL),
        ("<|im_start|>", CONTROL), ("<|im_end|>", CONTROL), ("<|tool_call_start|>", CONTROL),
        ("<|tool_call_end|>", CONTROL), ("<think>", USER_DEFINED), ("</think>", USER_DEFINED),
        # A control token whose text is also one whole pre-token: with ignore_merges llama.cpp
        # looks pre-tokens up among all token texts, so plain "<|>" becomes this token.
        ("<|>", CONTROL),
    ],
    "qwen35": [
        ("<|endoftext|>", CONTROL), ("<|im_start|>", CONTROL), ("<|im_end|>", CONTROL),
        ("<|object_ref_start|>", CONTROL), ("<|fim_prefix|>", CONTROL), ("<|fim_middle|>", CONTROL),
        ("<|fim_suffix|>", CONTROL), ("<|fim_pad|>", CONTROL), ("<|repo_name|>", CONTROL),
        ("<|file_sep|>", CONTROL), ("<tool_call>", USER_DEFINED), ("</tool_call>", USER_DEFINED),
        ("<think>", USER_DEFINED), ("</think>", USER_DEFINED), ("</s>", NORMAL),
    ],
}
# (bos, eos) by text, as the models' files name them.
BOS_EOS = {"lfm2": ("<|startoftext|>", "<|im_end|>"), "qwen35": ("<|endoftext|>", "<|im_end|>")}
# Whole pre-tokens added as normal tokens that no merge makes.
BAIT = [" Supercalifragilistic", "xyzzy", "987", " 😀😀", "'LL", "\n\n\n\n", " naïve", "e\u0301t\u00e9"]

TRAINING = """The quick brown fox jumps over the lazy dog. Hello world! Hello, world. hello there.
I'm sure they're fine; we've seen it, you'll see, she'd say it's done. DON'T SHOUT.
def tokenize(text):
    return [piece for piece in text.split(" ") if piece]  # 12 + 345 = 357

int main(void) {\r\n  return 0;\r\n}\r\n
Café naïve résumé façade; e\u0301te\u0301 cafe\u0301. Größe über straße.
你好，世界！日本語のテキスト。한국어 텍스트. Россия и Україна. مرحبا بالعالم. हिन्दी नमस्ते.
😀 emoji 👍🏽 🇫🇷 ❤️ 🤗🤗 1,000,000 and 3.14159 in 2024; 1234567890.
    indented\n\t\ttabs\n\n\nparagraphs   spaced   out   
<html><body class="x">Hi</body></html> https://example.com/path?q=1&r=2 user@example.com
"""

CORPUS = [
    "", " ", "  ", "\n", "\n\n", "\r\n", " \n ", "\t\t",
    "Hello world", "Hello   world", " Hello\n\nworld  ", "hello there.",
    "I'm sure they're fine; we've seen it, you'll see, she'd say it's done.", "DON'T SHOUT I'LL 'LL",
    "12 + 345 = 357", "1234567890", "987", "9876", "x987y", "½ ² ٣",
    "Supercalifragilistic", " Supercalifragilistic", "  Supercalifragilistic", "xyzzy", " xyzzy!", "xyzzyx",
    " 😀😀", "😀😀😀", "a\n\n\n\nb", "\n\n\n\n", " naïve", "naïve", "e\u0301t\u00e9", " e\u0301t\u00e9",
    "Café naïve résumé", "e\u0301te\u0301 cafe\u0301", "\u0301x", "हिन्दी नमस्ते",
    "你好，世界！", "مرحبا بالعالم", "👍🏽 🇫🇷 ❤️",
    "def tokenize(text):\n    return [piece for piece in text]\n", "int main(void) {\r\n  return 0;\r\n}\r\n",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "<|startoftext|><|im_start|>system\nBe brief.<|im_end|>\n",
    "<|endoftext|>", "<|im_end|>", "<|im_end", "<|im_start|><|im_end|>", "<|>", "a<|>b", " <|>", "<|><|>",
    "<think>\n\n</think>\n\nAnswer.", "<tool_call>{\"a\": 1}</tool_call>", "</s>", "a</s>b", " </s>",
    "<|fim_prefix|>x<|fim_suffix|>y<|fim_middle|>", "<|fim_pad|><|repo_name|>r<|file_sep|>f",
    "<|fim_pre|>a<|fim_suf|>b<|fim_mid|>", "<|tool_call_start|>[f()]<|tool_call_end|>", "<|pad|>",
    "x\x00y\x7f", "\U0010ffff\ue000", "\u0378", "zero\u200bwidth",
]
SPECIAL_TEXTS = sorted({t for family in SPECIALS.values() for t, _ in family})
PIECES = ["Hello", " world", "'s", "'LL", " they're", "12", "345", "987", " ", "  ", "\n", "\n\n\n\n", "\r\n", "\t",
          "é", "e\u0301", "\u0301", "naïve", " naïve", "xyzzy", " Supercalifragilistic", "😀", " 😀😀", "你好", "!",
          "...", "(", ")", "{", "<", "|", ">", "<|", "|>", "_", "\u00a0", "\u3000"]
RANDOM_STRINGS = 80


def random_strings(seed, count, avoid):
    rng = random.Random(seed)

    def one():
        out = []
        for _ in range(rng.randint(1, 12)):
            k = rng.random()
            if k < 0.25:
                out.append(rng.choice(SPECIAL_TEXTS))
            elif k < 0.85:
                out.append(rng.choice(PIECES))
            else:
                c = rng.choice([rng.randint(0x20, 0x7E), rng.randint(0xA0, 0x2FFF), rng.randint(0x4E00, 0x9FFF),
                                rng.randint(0x1F300, 0x1FAFF), rng.randint(0, 0x1F)])
                out.append(chr(c))
        return "".join(out)

    found = []
    while len(found) < count:
        text = one()
        if text not in avoid and text not in found:
            found.append(text)
    return found


def byte_level(text):
    """GPT-2's byte-level spelling of text."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, shifted = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + shifted)
            shifted += 1
    return "".join(table[b] for b in text.encode())


def train(name):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(HF_REGEX[name]), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    trainer = trainers.BpeTrainer(vocab_size=700, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([TRAINING] * 3, trainer=trainer)
    model = json.loads(tok.to_str())["model"]
    tokens = [t for t, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1])]
    assert [model["vocab"][t] for t in tokens] == list(range(len(tokens)))
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return tokens, merges


def build_vocab(name):
    tokens, merges = train(name)
    types = [NORMAL] * len(tokens)
    for bait in BAIT:
        spelled = byte_level(bait)
        if spelled not in tokens:
            tokens.append(spelled)
            types.append(NORMAL)
    for text, ty in SPECIALS[name]:
        assert text not in tokens, text
        tokens.append(text)
        types.append(ty)
    bos, eos = (tokens.index(t) for t in BOS_EOS[name])
    return {"tokens": tokens, "token_types": types, "merges": merges, "bos": bos, "eos": eos}


def write_gguf(path, name, vocab):
    w = gguf.GGUFWriter(path, "qwen2")
    w.add_block_count(1)
    w.add_context_length(256)
    w.add_embedding_length(64)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(name)
    w.add_token_list(vocab["tokens"])
    w.add_token_types(vocab["token_types"])
    w.add_token_merges(vocab["merges"])
    w.add_bos_token_id(vocab["bos"])
    w.add_eos_token_id(vocab["eos"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tokenize(vocab, text, add_special, parse_special):
    data = text.encode()
    capacity = len(data) + 8
    buf = (llama_cpp.llama_token * capacity)()
    n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, capacity, add_special, parse_special)
    if n < 0:
        sys.exit(f"tokenize failed on {text!r}")
    return list(buf[:n])


def piece(vocab, token, special):
    """llama.cpp's bytes of one token, as hex."""
    buf = ctypes.create_string_buffer(256)
    n = llama_cpp.llama_token_to_piece(vocab, token, buf, 256, 0, special)
    assert 0 <= n <= 256, (token, n)
    return buf.raw[:n].hex()


def run(name, corpus):
    vocab = build_vocab(name)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{name}.gguf")
        write_gguf(path, name, vocab)
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        model = llama_cpp.llama_model_load_from_file(path.encode(), params)
        if not model:
            sys.exit(f"llama.cpp cannot load the {name} vocabulary")
    v = llama_cpp.llama_model_get_vocab(model)
    n = llama_cpp.llama_vocab_n_tokens(v)
    assert n == len(vocab["tokens"])
    cases = []
    for text in corpus:
        for add_special in (False, True):
            for parse_special in (False, True):
                ids = tokenize(v, text, add_special, parse_special)
                cases.append({"text": text, "add_special": add_special, "parse_special": parse_special, "ids": ids})
    result = {
        "pre": name,
        "vocab": vocab,
        "add_bos": bool(llama_cpp.llama_vocab_get_add_bos(v)),
        "add_eos": bool(llama_cpp.llama_vocab_get_add_eos(v)),
        "end_of_generation": [i for i in range(n) if llama_cpp.llama_vocab_is_eog(v, i)],
        "pieces": [piece(v, i, False) for i in range(n)],
        "special_pieces": [piece(v, i, True) for i in range(n)],
        "cases": cases,
    }
    llama_cpp.llama_model_free(model)
    return result


def main():
    out_path = sys.argv[1]
    assert len(CORPUS) == len(set(CORPUS)), "duplicate corpus entries"
    corpus = CORPUS + random_strings(2026, RANDOM_STRINGS, set(CORPUS))
    families = [run(name, corpus) for name in ("lfm2", "qwen35")]
    doc = {
        "source": f"llama.cpp via llama-cpp-python {llama_cpp.__version__}",
        "merges_from": f"HF tokenizers {tokenizers.__version__} BpeTrainer",
        "strings": len(corpus),
        "families": families,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"{len(corpus)} strings, {sum(len(f['cases']) for f in families)} cases -> {out_path}")


if __name__ == "__main__":
    main()
