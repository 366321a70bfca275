"""Reads GGUF files written by the gguf crate with gguf-py (llama.cpp's Python package) and
checks them against the crate's own reading.

Usage: python check_with_gguf_py.py FILE.gguf [FILE.gguf ...]

Next to each FILE.gguf the Rust test writes FILE.gguf.expect: one line per metadata key
(`kv KEY TYPE`) and one per tensor (`tensor NAME TYPE DIMS HEX...`, the values the crate
dequantizes, as f32 bit patterns). Exits non-zero on the first difference.
"""
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType
from gguf.quants import dequantize


def type_name(field):
    names = [GGUFValueType(t).name.lower() for t in field.types]
    return "/".join(names)


def check(path):
    reader = GGUFReader(path)
    expect_kv, expect_tensors = {}, {}
    with open(path + ".expect") as f:
        for line in f:
            parts = line.split()
            if parts[0] == "kv":
                expect_kv[parts[1]] = parts[2]
            else:
                expect_tensors[parts[1]] = (parts[2], parts[3], parts[4:])
    fields = {k: v for k, v in reader.fields.items() if not k.startswith("GGUF.")}
    assert set(fields) == set(expect_kv), (path, set(fields) ^ set(expect_kv))
    for key, ty in expect_kv.items():
        assert type_name(fields[key]) == ty, (path, key, type_name(fields[key]), ty)
    tensors = {t.name: t for t in reader.tensors}
    assert set(tensors) == set(expect_tensors), path
    for name, (ty, dims, values) in expect_tensors.items():
        t = tensors[name]
        assert t.tensor_type.name == ty, (name, t.tensor_type.name, ty)
        assert ",".join(str(int(d)) for d in t.shape) == dims, (name, t.shape, dims)
        got = dequantize(t.data, t.tensor_type).astype(np.float32).reshape(-1).view(np.uint32)
        want = np.array([int(v, 16) for v in values], dtype=np.uint32)
        assert np.array_equal(got, want), (name, np.flatnonzero(got != want)[:5])
    print(f"{path}: gguf-py reads {len(fields)} keys and {len(tensors)} tensors, all values equal")


for p in sys.argv[1:]:
    check(p)
