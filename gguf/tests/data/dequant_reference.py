"""Reference values for the gguf crate's fixture tests, produced by gguf-py (llama.cpp's
Python package) from SmolLM2-135M-Instruct.Q4_1.gguf.

Usage: python dequant_reference.py FIXTURE.gguf > dequant_reference.txt

Each block of output is a header line `tensor ROW START COUNT TYPE` followed by COUNT lines of
f32 bit patterns (hex), the values gguf.quants.dequantize gives for elements START..START+COUNT
of row ROW.
"""
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

# (tensor, row, first element, count): one Q8_0 embedding row, one Q4_1 matrix row, an F32 norm.
PICKS = [
    ("token_embd.weight", 1000, 64, 128),
    ("blk.0.attn_q.weight", 7, 0, 128),
    ("blk.3.ffn_down.weight", 100, 1408, 128),
    ("blk.0.attn_norm.weight", 0, 0, 64),
]

reader = GGUFReader(sys.argv[1])
tensors = {t.name: t for t in reader.tensors}
for name, row, start, count in PICKS:
    t = tensors[name]
    # t.data is rows of raw blocks (or plain values); dequantize gives rows of ne0 floats.
    values = dequantize(t.data, t.tensor_type).reshape(-1, int(t.shape[0]))
    picked = values[row, start:start + count].astype(np.float32)
    print(name, row, start, count, t.tensor_type.name)
    for v in picked:
        print(f"{v.view(np.uint32):08x}")
