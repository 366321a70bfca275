"""Decodes or encodes a batch of ggml blocks with gguf-py (llama.cpp's Python package), for the
gguf crate's bit-exact comparisons (tests/quant_gguf_py.rs).

Usage: python quants_with_gguf_py.py dequantize TYPE IN OUT
       python quants_with_gguf_py.py quantize TYPE IN OUT

TYPE is a GGMLQuantizationType name (Q4_K, BF16, ...). dequantize reads whole blocks of TYPE
from IN and writes the values gguf.quants.dequantize gives, as little-endian f32, to OUT.
quantize reads little-endian f32 values (whole blocks) from IN and writes the bytes
gguf.quants.quantize gives to OUT.
"""
import sys

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize, quantize


def main(mode, type_name, src, dst):
    qtype = GGMLQuantizationType[type_name]
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    data = open(src, "rb").read()
    if mode == "dequantize":
        blocks = np.frombuffer(data, dtype=np.uint8).reshape(-1, type_size)
        with np.errstate(all="ignore"):
            values = dequantize(blocks, qtype)
        assert values.dtype == np.float32, values.dtype
        out = values.astype("<f4", copy=False).tobytes()
    elif mode == "quantize":
        values = np.frombuffer(data, dtype="<f4").reshape(-1, block_size)
        with np.errstate(all="ignore"):
            out = np.ascontiguousarray(quantize(values, qtype)).tobytes()
    else:
        raise SystemExit(f"unknown mode {mode}")
    with open(dst, "wb") as f:
        f.write(out)
    print(f"{mode} {type_name}: {len(data)} bytes in, {len(out)} bytes out")


main(*sys.argv[1:])
