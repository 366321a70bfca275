#!/usr/bin/env python3
"""Gemma 3 tokenizer reference vectors from llama.cpp's own SPM tokenizer.

Loads the Gemma 3 270M GGUF with llama-cpp-python (vocab_only=True) and, for every string of
CORPUS and RANDOM_STRINGS seeded random mixtures, records llama.cpp's `llama_tokenize(text, add_special, parse_special)` for all four
combinations, and `llama_detokenize(ids, remove_special=False, unparse_special=parse_special)` of
each result -> gemma3_expected.json. The Rust test (tests/gemma3_reference.rs) builds the tokenizer
from the same file's metadata (env REDLINE_GEMMA3_GGUF) and must agree on every vector.

Detokenization goes through the C API directly: the high-level `Llama.detokenize` of
llama-cpp-python decodes token by token into a 32-byte buffer (longer pieces, such as Gemma's
whitespace runs, come out cut) and drops a space after BOS by itself, which is neither llama.cpp's
detokenizer nor this project's decoder.

Usage: python gen_gemma3_reference.py gemma-3-270m-q4_k_m.gguf gemma3_expected.json
(needs llama-cpp-python; see README.md beside this file for the versions used)
"""
import ctypes
import hashlib
import json
import sys

import random

import llama_cpp

# A few strings built from repetition or code points, kept readable here.
LONG = [
    "a" * 1000,
    "ab" * 500,
    " " * 100,
    "\n" * 100,
    "\t" * 70,
    "!" * 300,
    "😀" * 50,
    "日本" * 200,
    "The quick brown fox jumps over the lazy dog. " * 40,
    "=" * 257,
    "- " * 150,
    "0123456789" * 30,
    "\u2581" * 40,
    "<start_of_turn>" * 20,
    "x<eos>" * 30,
    " \n" * 64,
    "😀" * 3 + "\u200d" * 3,
]

CORPUS = [
    # empty and whitespace
    "",
    " ",
    "  ",
    "   ",
    "    ",
    " " * 31,
    " " * 32,
    " " * 33,
    "\t",
    "\t\t",
    "\n",
    "\n\n",
    "\n\n\n",
    "\n" * 31,
    "\n" * 32,
    "\r\n",
    "\r",
    " \n",
    "\n ",
    " \t \n ",
    "\x0b\x0c",
    # ASCII words and spaces
    "Hello",
    " Hello",
    "  Hello",
    "Hello ",
    "Hello  ",
    "Hello world",
    "Hello  world",
    "Hello   world",
    "Hello\tworld",
    "Hello\nworld",
    "Hello\n\nworld",
    "  leading and trailing  ",
    "a b c d e f g",
    "a  b   c    d",
    "The capital of France is Paris.",
    "What is 2+2?",
    "12345",
    " 12345",
    "3.14159 and 1,000,000",
    "year2024abc",
    "don't I'll we've they're she's it'd I'm",
    "DON'T SHOUT",
    "CamelCaseIdentifierWithManyParts",
    "snake_case_identifier_with_parts",
    "https://example.com/path?query=1&other=two#frag",
    "user@example.org",
    "Hello, World!!! ... ??? --- (parens) [brackets] {braces}",
    "!!!???",
    "a.b,c;d:e",
    "~`@#$%^&*_+-=|\\/<>",
    "I love tokenizers; they're fun.",
    "antidisestablishmentarianism",
    "Supercalifragilisticexpialidocious",
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "zzzzqqqxxjjj",
    "Once upon a time, there was a little girl named Lily.",
    # accented Latin and other scripts
    "café",
    "naïve résumé",
    "Crème brûlée à la française",
    "Größe Straße Übermäßig",
    "Ångström Øresund Æble",
    "Zażółć gęślą jaźń",
    "Tiếng Việt có dấu",
    "e\u0301",
    "cafe\u0301",
    "ñandú pingüino",
    "Привет, мир!",
    "Γειά σου Κόσμε",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "ქართული ენა",
    "Հայերեն",
    "አማርኛ",
    "ᚠᚢᚦᚨᚱᚲ",
    # CJK
    "你好，世界",
    "我爱自然语言处理。",
    "日本語のテキスト",
    "こんにちは世界",
    "カタカナとひらがな",
    "한국어 텍스트",
    "안녕하세요 세계",
    "漢字仮名交じり文",
    "中文 English 混合 text",
    "全角スペース\u3000あり",
    "１２３ＡＢＣ",
    # emoji and ZWJ sequences
    "😀",
    "😀😃😄",
    "Hello 👋 world 🌍",
    "👨\u200d👩\u200d👧\u200d👦",
    "🏳\ufe0f\u200d🌈",
    "👩🏽\u200d💻",
    "🇫🇷🇯🇵",
    "❤️",
    "✋🏿",
    "🧑\u200d🤝\u200d🧑",
    "\u200d",
    "\u200b",
    "\ufeff",
    "a\u00adb",
    # code
    "def foo(x):\n    return x ** 2  # comment\n",
    "fn main() {\n    println!(\"hi\");\n}",
    "if (a && b) {\n\treturn;\n}\n",
    "\tindented\n\t\tmore\n\t\t\tdeeper",
    "int main(void) {\r\n  return 0;\r\n}\r\n",
    "for i in range(10):\n\tprint(i)\n",
    '{"key": "value", "list": [1, 2, 3], "nested": {"a": null}}',
    "SELECT * FROM users WHERE id = 42;",
    "<div class=\"x\"><span>hi</span></div>",
    "<table><tr><td>1</td></tr></table>",
    "x = [i*i for i in range(100) if i % 3 == 0]",
    "#include <stdio.h>\n",
    "    four spaces of indent",
    "        eight spaces of indent",
    "$ ls -la | grep foo > out.txt 2>&1",
    "a\tb\tc\n1\t2\t3\n",
    "// TODO: fix this\n/* block */",
    "```python\nprint('hi')\n```",
    # special tokens and their look-alikes
    "<bos>",
    "<eos>",
    "<pad>",
    "<unk>",
    "<mask>",
    "[multimodal]",
    "<start_of_turn>",
    "<end_of_turn>",
    "<start_of_image>",
    "<end_of_image>",
    "<unused0>",
    "<unused99>",
    "<unused6241>",
    "<s>",
    "</s>",
    "a</s>b",
    "<b>bold</b>",
    "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
    "<bos><start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
    "<start_of_turn>user Hi<end_of_turn>",
    "text<bos>text",
    "<bos> leading space after bos",
    "<start_of_turn",
    "start_of_turn>",
    "<start_of_turn><start_of_turn>",
    "<<bos>>",
    "<eos><eos>",
    "<unused1234><unused12>",
    "<h1>Title</h1>",
    "<code>x</code>",
    "<0x41>",
    "<0xZZ>",
    "\u2581",
    "\u2581Hello",
    "Hello\u2581world",
    "\u2581 \u2581",
    # byte fallback: characters that are not pieces
    "\x00",
    "\x01\x02\x03",
    "\x7f",
    "a\x00b",
    "\U0010ffff",
    "\ue000\uf8ff",
    "\U000f0000",
    "𠀀𠀁𠀂",
    "𐀀𐀁 Linear B",
    "𓀀𓀁 hieroglyphs",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "\u0378",
    "ꙮ",
    "\u1dc0\u1dc1",
    "x\u0300\u0301\u0302\u0303\u0304",
    "\U0001fae8",
    "𒀀𒀁 cuneiform",
    "\U0001d11e music",
    "⿰⿱⿲",
    # numbers and mixtures
    "1+1=2",
    "3.0e-10",
    "-42",
    "0x1F 0b1010 0o777",
    "2024-01-01T00:00:00Z",
    "$1,234.56",
    "50%",
    "½ ¼ ¾",
    "①②③",
    "Ⅻ",
    "x² + y³",
    "∑∫∂√∞≠≤≥",
    "→←↑↓",
    "©®™",
    "“smart quotes” ‘single’",
    "em—dash en–dash",
    "…",
    "• bullet",
    "¿Qué? ¡Sí!",
    "« guillemets »",
    # sentences of mixed content
    "The year 2024 was 😀 and 日本 too.",
    "Mixed: café 中文 😀 \t tab \n newline",
    "Line one.\nLine two.\n\nParagraph two.",
    "   \n   \n",
    "trailing newline\n",
    "\nleading newline",
    "Repeated   spaces   between   words",
    "a" * 31,
    "aaaa bbbb cccc",
    "hello hello hello hello",
    "HELLO hello Hello hElLo",
    "Q: What is the meaning of life?\nA: 42.",
    "Translate to French: I like cheese.",
    "Summarize: The mitochondria is the powerhouse of the cell.",
] + LONG

# Seeded random mixtures of the above kinds (runs of spaces, newlines and tabs; specials, parts
# of specials and `▁`; words of several scripts; random code points of every plane), for the
# interactions between them. The texts are stored in the JSON, so the test does not depend on
# Python's generator.
SPECIALS = ["<bos>", "<eos>", "<pad>", "<unk>", "<mask>", "[multimodal]", "<start_of_turn>", "<end_of_turn>",
            "<start_of_image>", "</s>", "<s>", "<b>", "</b>", "<table>", "<unused0>", "<unused6241>", "<h1>",
            "<0x41>", "\u2581"]
PARTS = ["<start_of", "turn>", "<", ">", "<unused", "<0x", "_", "\u2581\u2581", "[", "]"]
WORDS = ["the", "Hello", " world", "ing", "tion", "café", "naïve", "Größe", "日本", "语言", "한국", "😀",
         "👨\u200d👩\u200d👧", "🇫🇷", "\u0301", "\u200d", "\ufe0f", "def", "fn", "{", "}", "(", ")", ";", "==",
         "->", "12", "3.5", "don't", "'s"]
RANDOM_STRINGS = 100


def random_strings(seed, count, avoid):
    rng = random.Random(seed)

    def code_point():
        while True:
            c = rng.choice([rng.randint(0x20, 0x7E), rng.randint(0xA0, 0x2FFF), rng.randint(0x3000, 0x9FFF),
                            rng.randint(0xAC00, 0xD7A3), rng.randint(0xE000, 0xFFFF),
                            rng.randint(0x10000, 0x10FFFF), rng.randint(0, 0x1F)])
            if not 0xD800 <= c <= 0xDFFF:
                return chr(c)

    def one():
        out = []
        for _ in range(rng.randint(1, 25)):
            k = rng.random()
            if k < 0.15:
                out.append(" " * rng.randint(1, 40))
            elif k < 0.22:
                out.append("\n" * rng.randint(1, 35))
            elif k < 0.27:
                out.append("\t" * rng.randint(1, 33))
            elif k < 0.40:
                out.append(rng.choice(SPECIALS))
            elif k < 0.47:
                out.append(rng.choice(PARTS))
            elif k < 0.75:
                out.append(rng.choice(WORDS))
            elif k < 0.85:
                out.append(rng.choice("abcdefghijklmnopqrstuvwxyz") * rng.randint(1, 12))
            else:
                out.append("".join(code_point() for _ in range(rng.randint(1, 5))))
        return "".join(out)

    found = []
    while len(found) < count:
        text = one()
        if text not in avoid and text not in found:
            found.append(text)
    return found


def vocab_of(path):
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(path.encode(), params)
    if not model:
        sys.exit(f"cannot load {path}")
    return model, llama_cpp.llama_model_get_vocab(model)


def tokenize(vocab, text, add_special, parse_special):
    data = text.encode()
    capacity = len(data) + 8
    buf = (llama_cpp.llama_token * capacity)()
    n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, capacity, add_special, parse_special)
    if n < 0:
        capacity = -n
        buf = (llama_cpp.llama_token * capacity)()
        n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, capacity, add_special, parse_special)
    if n < 0:
        sys.exit(f"tokenize failed on {text!r}")
    return list(buf[:n])


def detokenize(vocab, ids, unparse_special):
    arr = (llama_cpp.llama_token * max(len(ids), 1))(*ids)
    capacity = 64 + 16 * len(ids)
    while True:
        out = ctypes.create_string_buffer(capacity)
        n = llama_cpp.llama_detokenize(vocab, arr, len(ids), out, capacity, False, unparse_special)
        if n >= 0:
            return out.raw[:n]
        capacity = -n


def main():
    path, out_path = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        sha256 = hashlib.file_digest(f, "sha256").hexdigest()
    model, vocab = vocab_of(path)
    assert len(CORPUS) == len(set(CORPUS)), "duplicate corpus entries"
    corpus = CORPUS + random_strings(2025, RANDOM_STRINGS, set(CORPUS))
    cases = []
    for text in corpus:
        for add_special in (False, True):
            for parse_special in (False, True):
                ids = tokenize(vocab, text, add_special, parse_special)
                detok = detokenize(vocab, ids, parse_special)
                case = {"text": text, "add_special": add_special, "parse_special": parse_special, "ids": ids}
                try:
                    case["detokenized"] = detok.decode()
                except UnicodeDecodeError:
                    case["detokenized_bytes"] = list(detok)
                cases.append(case)
    llama_cpp.llama_model_free(model)
    doc = {
        "source": f"llama.cpp via llama-cpp-python {llama_cpp.__version__}",
        "gguf_sha256": sha256,
        "strings": len(corpus),
        "cases": cases,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"{len(corpus)} strings, {len(cases)} cases -> {out_path}")


if __name__ == "__main__":
    main()
