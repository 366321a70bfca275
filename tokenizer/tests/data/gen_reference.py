#!/usr/bin/env python3
"""Reference data for the tokenizer tests, from independent implementations.

1. Reads SmolLM2's vocabulary from a GGUF file with llama.cpp's gguf-py, builds a HuggingFace
   `tokenizers` BPE tokenizer from it with SmolLM2's pre-tokenizer configuration
   (Sequence[Digits(individual_digits), ByteLevel(add_prefix_space=False, use_regex=True)]) and its
   control tokens as special added tokens, and encodes CORPUS -> smollm2_expected.json.
2. Renders CONVERSATIONS with jinja2 from the GGUF's own chat template -> chatml_expected.json.
3. Splits CORPUS with HF's pre-tokenizers alone (gpt2: ByteLevel(use_regex); smollm: Digits +
   ByteLevel) -> pretokenize_expected.json, pieces mapped back from byte-level form to text.
4. Writes the vocabulary (tokens, types, merges, ids, pre, template) as JSON to VOCAB_JSON for the
   inspection (the Rust test reads the GGUF itself, env REDLINE_SMOLLM2_GGUF); it is not committed.

Usage: python gen_reference.py MODEL.gguf VOCAB_JSON   (needs: gguf numpy tokenizers jinja2)
"""
import json
import os
import sys

import jinja2
from gguf import GGUFReader
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

CORPUS = [
    "",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    "\n\n\n",
    " \n",
    "\r\n",
    "Hello",
    " Hello",
    "  Hello",
    "Hello ",
    "Hello  ",
    "Hello world",
    "Hello   world",
    "Hello\tworld",
    "Hello\n\nworld",
    "Hello \n world \n",
    "\tindented\n\t\tmore",
    "The capital of France is",
    "What is 2+2?",
    "12345",
    " 12345",
    "3.14159 and 1,000,000",
    "year2024abc",
    "don't I'll we've they're she's it'd I'm",
    "DON'T I'LL",
    "''quoted'' 's",
    "Hello, World!!! ... ??? --- (parens) [brackets] {braces}",
    "!!!???",
    " !!! ???",
    "a.b,c;d:e",
    "def foo(x):\n    return x ** 2  # comment\n",
    "fn main() {\n    println!(\"hi\");\n}",
    "if (a && b || !c) { x += 1; }",
    "<html><body class=\"x\">Hi</body></html>",
    "https://example.com/path?q=1&r=2",
    "user@example.com",
    "Café naïve résumé façade",
    "e\u0301 combining accent",
    "Ångström über straße",
    "你好，世界！",
    "日本語のテキスト",
    "한국어 텍스트",
    "Россия и Україна",
    "مرحبا بالعالم",
    "😀 emoji 👍🏽 🇫🇷 ❤️",
    "🤗🤗🤗",
    "zero\u200bwidth and\u00a0nbsp",
    "x² + y³ = ½ Ⅻ ٣",
    "\u3000ideographic space",
    "tabs\t\tand  spaces \t mixed",
    "trailing spaces   ",
    "   leading spaces",
    "<|im_start|>user\nHi<|im_end|>\n",
    "<|im_start|>",
    "text<|im_end|>more",
    "<|endoftext|><|endoftext|>",
    "<|im_start|system",
    "<repo_name>x<file_sep>",
    "a\u0000b",
    "ctrl\u0004char x\u0004\u0004y \u0013\u0014",
    "mixedCASE camelCase snake_case kebab-case",
]

# (text, parse_special): every corpus string without special parsing, the ones with markup also with.
CASES = [(s, False) for s in CORPUS] + [(s, True) for s in CORPUS if "<" in s]

CONVERSATIONS = [
    ([{"role": "user", "content": "Hi"}], True),
    ([{"role": "user", "content": "Hi"}], False),
    ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}], True),
    ([
        {"role": "user", "content": "Hello!"},
        {"role": "assistant", "content": "Hi! How can I help?"},
        {"role": "user", "content": "Tell me a joke.\nA short one."},
    ], True),
    ([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
    ], False),
    ([{"role": "assistant", "content": "I start."}], True),
    ([{"role": "user", "content": "  spaces \n and unicode ü 😀  "}], True),
    ([], True),
]


def gpt2_bytes_to_unicode():
    """GPT-2's byte -> character table (printable Latin-1 as itself, the rest from U+0100)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, shifted = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + shifted)
            shifted += 1
    return table


def field_str(reader, key):
    f = reader.fields[key]
    return bytes(f.parts[f.data[0]]).decode("utf-8")


def field_int(reader, key):
    f = reader.fields[key]
    return int(f.parts[f.data[0]][0])


def field_strs(reader, key):
    f = reader.fields[key]
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]


def main():
    model_path, vocab_out = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    r = GGUFReader(model_path)
    tokens = field_strs(r, "tokenizer.ggml.tokens")
    f = r.fields["tokenizer.ggml.token_type"]
    types = [int(f.parts[i][0]) for i in f.data]
    merges = field_strs(r, "tokenizer.ggml.merges")
    template = field_str(r, "tokenizer.chat_template")
    vocab = {
        "tokens": tokens,
        "token_types": types,
        "merges": merges,
        "bos": field_int(r, "tokenizer.ggml.bos_token_id"),
        "eos": field_int(r, "tokenizer.ggml.eos_token_id"),
        "unk": field_int(r, "tokenizer.ggml.unknown_token_id"),
        "pad": field_int(r, "tokenizer.ggml.padding_token_id"),
        "pre": field_str(r, "tokenizer.ggml.pre"),
        "chat_template": template,
    }
    with open(vocab_out, "w", encoding="utf-8") as out:
        json.dump(vocab, out, ensure_ascii=False)

    bpe = models.BPE(
        vocab={t: i for i, t in enumerate(tokens)},
        merges=[tuple(m.split(" ")) for m in merges],
        unk_token=None,
        fuse_unk=False,
        byte_fallback=False,
    )
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    control = [t for t, ty in zip(tokens, types) if ty == 3]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])

    cases = []
    for text, parse_special in CASES:
        # Without special parsing, control-token text must be tokenized as plain text.
        tok.encode_special_tokens = not parse_special
        ids = tok.encode(text, add_special_tokens=False).ids
        cases.append({"text": text, "parse_special": parse_special, "ids": ids})
    with open(os.path.join(here, "smollm2_expected.json"), "w", encoding="utf-8") as out:
        json.dump({"source": "HF tokenizers " + __import__("tokenizers").__version__, "cases": cases},
                  out, ensure_ascii=False, indent=1)

    byte_to_char = gpt2_bytes_to_unicode()
    char_to_byte = {c: b for b, c in byte_to_char.items()}
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    splitters = {
        "gpt2": byte_level,
        "smollm": pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level]),
    }
    splits = []
    for text in CORPUS:
        entry = {"text": text}
        for name, pre in splitters.items():
            pieces = [bytes(char_to_byte[c] for c in p).decode("utf-8") for p, _ in pre.pre_tokenize_str(text)]
            entry[name] = pieces
        splits.append(entry)
    with open(os.path.join(here, "pretokenize_expected.json"), "w", encoding="utf-8") as out:
        json.dump({"source": "HF tokenizers " + __import__("tokenizers").__version__, "cases": splits},
                  out, ensure_ascii=False, indent=1)

    env = jinja2.Environment()
    jt = env.from_string(template)
    chats = []
    for messages, gen in CONVERSATIONS:
        chats.append({"messages": messages, "add_generation_prompt": gen,
                      "expected": jt.render(messages=messages, add_generation_prompt=gen)})
    with open(os.path.join(here, "chatml_expected.json"), "w", encoding="utf-8") as out:
        json.dump({"template": template, "conversations": chats}, out, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
