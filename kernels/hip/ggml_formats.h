// The ggml block formats (ggml-common.h) and the value of every element, written once for the
// device (hip/ggml_quants.hip, with GF_DEVICE defined as __device__) and for the host (the CPU
// references' check, kernel-refs/tests/formats_host.rs, compiles this header with the host clang
// and compares every element's bits with kernel_refs::cpu::ggml). Build with -ffp-contract=off:
// every multiply and add below is rounded on its own, as the CPU references compute it.
//
// A row of `cols` values is `cols / VALUES` blocks of BYTES bytes, and is read in chunks of 32
// consecutive values: chunk c of a row lies in block c / (VALUES / 32), as that block's chunk
// c % (VALUES / 32). `chunk(block, c)` reads what the chunk's values share (the f16 scales, for the
// K formats the chunk's sub-block scales and mins, computed in f32 as ggml's dequantize_row_*
// computes them); `at(k, j)` is the chunk's value j < 32 in the operation order of ggml's
// dequantize_row_* (ggml-quants.c). F16 and BF16 are tabled as blocks of 32 values.
#pragma once

#ifndef GF_DEVICE
#define GF_DEVICE
#endif

namespace gf {

typedef unsigned char u8;
typedef unsigned int uint;

static GF_DEVICE inline uint u16_at(const u8* p) { return (uint)p[0] | ((uint)p[1] << 8); }

// The binary16 value with bits h, exactly, from bit operations only (so that host and device give
// the same bits): subnormals by one exact multiply, a NaN quiet with its payload, as the GPU's
// v_cvt_f32_f16 gives it.
static GF_DEVICE inline float f16_bits(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint exp = (h >> 10) & 0x1fu;
  uint man = h & 0x3ffu;
  if (exp == 0x1fu) return __builtin_bit_cast(float, sign | 0x7f800000u | (man << 13) | (man != 0 ? 0x400000u : 0u));
  if (exp == 0) {
    float v = (float)man * 5.9604644775390625e-8f;  // man * 2^-24: exact
    return __builtin_bit_cast(float, sign | __builtin_bit_cast(uint, v));
  }
  return __builtin_bit_cast(float, sign | ((exp + 112u) << 23) | (man << 13));
}

static GF_DEVICE inline float f16_at(const u8* p) { return f16_bits(u16_at(p)); }

// Q4_0 { f16 d; u8 qs[16] }: value j is ((qs[j] & 15) - 8) * d, value j + 16 is ((qs[j] >> 4) - 8) * d.
struct Q4_0 {
  static constexpr uint BYTES = 18, VALUES = 32;
  struct Chunk { const u8* qs; float d; };
  static GF_DEVICE inline Chunk chunk(const u8* b, uint) { return Chunk{b + 2, f16_at(b)}; }
  static GF_DEVICE inline float at(const Chunk& k, uint j) {
    int q = j < 16 ? (k.qs[j] & 15) : (k.qs[j - 16] >> 4);
    return (float)(q - 8) * k.d;
  }
};

// Q4_1 { f16 d; f16 m; u8 qs[16] }: q * d + m.
struct Q4_1 {
  static constexpr uint BYTES = 20, VALUES = 32;
  struct Chunk { const u8* qs; float d, m; };
  static GF_DEVICE inline Chunk chunk(const u8* b, uint) { return Chunk{b + 4, f16_at(b), f16_at(b + 2)}; }
  static GF_DEVICE inline float at(const Chunk& k, uint j) {
    int q = j < 16 ? (k.qs[j] & 15) : (k.qs[j - 16] >> 4);
    return (float)q * k.d + k.m;
  }
};

// Q5_0 { f16 d; u8 qh[4]; u8 qs[16] }: the fifth bit of value j is bit j of qh (little-endian);
// (q - 16) * d.
struct Q5_0 {
  static constexpr uint BYTES = 22, VALUES = 32;
  struct Chunk { const u8* qs; uint qh; float d; };
  static GF_DEVICE inline Chunk chunk(const u8* b, uint) {
    uint qh = u16_at(b + 2) | (u16_at(b + 4) << 16);
    return Chunk{b + 6, qh, f16_at(b)};
  }
  static GF_DEVICE inline float at(const Chunk& k, uint j) {
    int q = (j < 16 ? (k.qs[j] & 15) : (k.qs[j - 16] >> 4)) | (int)(((k.qh >> j) & 1u) << 4);
    return (float)(q - 16) * k.d;
  }
};

// Q5_1 { f16 d; f16 m; u8 qh[4]; u8 qs[16] }: q * d + m.
struct Q5_1 {
  static constexpr uint BYTES = 24, VALUES = 32;
  struct Chunk { const u8* qs; uint qh; float d, m; };
  static GF_DEVICE inline Chunk chunk(const u8* b, uint) {
    uint qh = u16_at(b + 4) | (u16_at(b + 6) << 16);
    return Chunk{b + 8, qh, f16_at(b), f16_at(b + 2)};
  }
  static GF_DEVICE inline float at(const Chunk& k, uint j) {
    int q = (j < 16 ? (k.qs[j] & 15) : (k.qs[j - 16] >> 4)) | (int)(((k.qh >> j) & 1u) << 4);
    return (float)q * k.d + k.m;
  }
};

// Q8_0 { f16 d; i8 qs[32] }: q * d.
struct Q8_0 {
  static constexpr uint BYTES = 34, VALUES = 32;
  struct Chunk { const u8* qs; float d; };
  static GF_DEVICE inline Chunk chunk(const u8* b, uint) { return Chunk{b + 2, f16_at(b)}; }
  static GF_DEVICE inline float at(const Chunk& k, uint j) { return (float)(signed char)k.qs[j] * k.d; }
};

// Q2_K { u8 scales[16]; u8 qs[64]; f16 d; f16 dmin }: sub-block s of 16 values has
// dl = d * (scales[s] & 15), ml = dmin * (scales[s] >> 4); value dl * q - ml, q 2 bits. Chunk c
// takes bits 2 (c % 4) of qs[32 (c / 4) + j] and sub-blocks 2c, 2c + 1.
struct Q2_K {
  static constexpr uint BYTES = 84, VALUES = 256;
  struct Chunk { const u8* qs; uint shift; float dl0, dl1, ml0, ml1; };
  static GF_DEVICE inline Chunk chunk(const u8* b, uint c) {
    float d = f16_at(b + 80), dmin = f16_at(b + 82);
    uint s0 = b[2 * c], s1 = b[2 * c + 1];
    return Chunk{b + 16 + 32 * (c / 4), 2 * (c % 4), d * (float)(s0 & 15), d * (float)(s1 & 15),
                 dmin * (float)(s0 >> 4), dmin * (float)(s1 >> 4)};
  }
  static GF_DEVICE inline float at(const Chunk& k, uint j) {
    int q = (k.qs[j] >> k.shift) & 3;
    return (j < 16 ? k.dl0 : k.dl1) * (float)q - (j < 16 ? k.ml0 : k.ml1);
  }
};

// Q3_K { u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d }: sub-block s of 16 values has the 6-bit
// scale sc (low 4 bits from scales[s % 8], high or low nibble by s / 8, top 2 bits from
// scales[8 + s % 4] at bit 2 (s / 4)), dl = d * (sc - 32); value dl * (q - (hmask bit ? 0 : 4)),
// q 2 bits. Chunk c takes bits 2 (c % 4) of qs[32 (c / 4) + j], bit c of hmask[j], and sub-blocks
// 2c, 2c + 1.
struct Q3_K {
  static constexpr uint BYTES = 110, VALUES = 256;
  struct Chunk { const u8* hm; const u8* qs; uint shift, bit; float dl0, dl1; };
  static GF_DEVICE inline int scale(const u8* sc, uint s) {
    uint low = s < 8 ? (sc[s] & 15u) : (sc[s - 8] >> 4);
    uint high = (sc[8 + s % 4] >> (2 * (s / 4))) & 3u;
    return (int)(low | (high << 4)) - 32;
  }
  static GF_DEVICE inline Chunk chunk(const u8* b, uint c) {
    float d = f16_at(b + 108);
    return Chunk{b, b + 32 + 32 * (c / 4), 2 * (c % 4), c,
                 d * (float)scale(b + 96, 2 * c), d * (float)scale(b + 96, 2 * c + 1)};
  }
  static GF_DEVICE inline float at(const Chunk& k, uint j) {
    int q = (int)((k.qs[j] >> k.shift) & 3u) - (((k.hm[j] >> k.bit) & 1u) ? 0 : 4);
    return (j < 16 ? k.dl0 : k.dl1) * (float)q;
  }
};

// The 6-bit scale and min of sub-block s < 8 of Q4_K and Q5_K (ggml's get_scale_min_k4).
static GF_DEVICE inline void scale_min_k4(const u8* q, uint s, uint* sc, uint* m) {
  if (s < 4) {
    *sc = q[s] & 63u;
    *m = q[s + 4] & 63u;
  } else {
    *sc = (q[s + 4] & 15u) | ((uint)(q[s - 4] >> 6) << 4);
    *m = (q[s + 4] >> 4) | ((uint)(q[s] >> 6) << 4);
  }
}

// Q4_K { f16 d; f16 dmin; u8 scales[12]; u8 qs[128] }: chunk c is sub-block c, with
// d1 = d * sc, m1 = dmin * m; value d1 * q - m1, q the low (c even) or high nibble of
// qs[32 (c / 2) + j].
struct Q4_K {
  static constexpr uint BYTES = 144, VALUES = 256;
  struct Chunk { const u8* qs; uint shift; float d1, m1; };
  static GF_DEVICE inline Chunk chunk(const u8* b, uint c) {
    uint sc, m;
    scale_min_k4(b + 4, c, &sc, &m);
    return Chunk{b + 16 + 32 * (c / 2), 4 * (c % 2), f16_at(b) * (float)sc, f16_at(b + 2) * (float)m};
  }
  static GF_DEVICE inline float at(const Chunk& k, uint j) {
    int q = (k.qs[j] >> k.shift) & 15;
    return k.d1 * (float)q - k.m1;
  }
};

// Q5_K { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128] }: as Q4_K, with bit c of qh[j]
// adding 16 to q.
struct Q5_K {
  static constexpr uint BYTES = 176, VALUES = 256;
  struct Chunk { const u8* qh; const u8* qs; uint shift, bit; float d1, m1; };
  static GF_DEVICE inline Chunk chunk(const u8* b, uint c) {
    uint sc, m;
    scale_min_k4(b + 4, c, &sc, &m);
    return Chunk{b + 16, b + 48 + 32 * (c / 2), 4 * (c % 2), c, f16_at(b) * (float)sc, f16_at(b + 2) * (float)m};
  }
  static GF_DEVICE inline float at(const Chunk& k, uint j) {
    int q = ((k.qs[j] >> k.shift) & 15) + (((k.qh[j] >> k.bit) & 1u) ? 16 : 0);
    return k.d1 * (float)q - k.m1;
  }
};

// Q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d }: chunk c = 4 g + s takes the low (s < 2)
// or high nibble of ql[64 g + 32 (s % 2) + j], bits 2s of qh[32 g + j] as bits 4 and 5, and scale
// scales[8 g + 2 s + j / 16]; value (d * scale) * (q - 32).
struct Q6_K {
  static constexpr uint BYTES = 210, VALUES = 256;
  struct Chunk { const u8* ql; const u8* qh; uint shift_l, shift_h; float ds0, ds1; };
  static GF_DEVICE inline Chunk chunk(const u8* b, uint c) {
    uint g = c / 4, s = c % 4;
    float d = f16_at(b + 208);
    const u8* sc = b + 192 + 8 * g + 2 * s;
    return Chunk{b + 64 * g + 32 * (s % 2), b + 128 + 32 * g, 4 * (s / 2), 2 * s,
                 d * (float)(signed char)sc[0], d * (float)(signed char)sc[1]};
  }
  static GF_DEVICE inline float at(const Chunk& k, uint j) {
    int q = (int)(((k.ql[j] >> k.shift_l) & 15u) | (((k.qh[j] >> k.shift_h) & 3u) << 4)) - 32;
    return (j < 16 ? k.ds0 : k.ds1) * (float)q;
  }
};

// F16: 32 binary16 values, converted exactly.
struct F16 {
  static constexpr uint BYTES = 64, VALUES = 32;
  struct Chunk { const u8* v; };
  static GF_DEVICE inline Chunk chunk(const u8* b, uint) { return Chunk{b}; }
  static GF_DEVICE inline float at(const Chunk& k, uint j) { return f16_at(k.v + 2 * j); }
};

// BF16: 32 bfloat16 values, the top halves of f32s (every bit kept, as ggml's GGML_BF16_TO_FP32).
struct BF16 {
  static constexpr uint BYTES = 64, VALUES = 32;
  struct Chunk { const u8* v; };
  static GF_DEVICE inline Chunk chunk(const u8* b, uint) { return Chunk{b}; }
  static GF_DEVICE inline float at(const Chunk& k, uint j) { return __builtin_bit_cast(float, u16_at(k.v + 2 * j) << 16); }
};

// Chunk c of the row at `row`, as its format reads it.
template <class F>
static GF_DEVICE inline typename F::Chunk row_chunk(const u8* row, uint c) {
  const uint per_block = F::VALUES / 32;
  return F::chunk(row + (unsigned long)(c / per_block) * F::BYTES, c % per_block);
}

}  // namespace gf
