// Host driver for tests/formats_host.rs: the element values of kernels/hip/ggml_formats.h, read
// exactly as the kernels of hip/ggml_quants.hip read them (gf::row_chunk, then F::at per value).
//
// Reads records from stdin until its end: one byte naming the format (its index in
// kernel_refs::cpu::BlockFormat::ALL), one byte counting blocks, then that many blocks of the
// format; writes every value of the row, in order, as the 4 little-endian bytes of its f32 bits.
// Exits 1 on a short record or an unknown format.
#include <stdio.h>

#include "ggml_formats.h"

template <class F>
static int row(FILE* in, FILE* out, unsigned blocks) {
  static unsigned char bytes[255 * 256];
  unsigned long len = (unsigned long)blocks * F::BYTES;
  if (fread(bytes, 1, len, in) != len) return 1;
  for (unsigned c = 0; c < blocks * (F::VALUES / 32); ++c) {
    typename F::Chunk k = gf::row_chunk<F>(bytes, c);
    for (unsigned j = 0; j < 32; ++j) {
      unsigned bits = __builtin_bit_cast(unsigned, F::at(k, j));
      unsigned char le[4] = {(unsigned char)bits, (unsigned char)(bits >> 8), (unsigned char)(bits >> 16),
                             (unsigned char)(bits >> 24)};
      if (fwrite(le, 1, 4, out) != 4) return 1;
    }
  }
  return 0;
}

int main() {
  int format;
  while ((format = getchar()) != EOF) {
    int blocks = getchar();
    if (blocks == EOF) return 1;
    unsigned n = (unsigned)blocks;
    int failed;
    switch (format) {
      case 0: failed = row<gf::Q4_0>(stdin, stdout, n); break;
      case 1: failed = row<gf::Q4_1>(stdin, stdout, n); break;
      case 2: failed = row<gf::Q5_0>(stdin, stdout, n); break;
      case 3: failed = row<gf::Q5_1>(stdin, stdout, n); break;
      case 4: failed = row<gf::Q8_0>(stdin, stdout, n); break;
      case 5: failed = row<gf::Q2_K>(stdin, stdout, n); break;
      case 6: failed = row<gf::Q3_K>(stdin, stdout, n); break;
      case 7: failed = row<gf::Q4_K>(stdin, stdout, n); break;
      case 8: failed = row<gf::Q5_K>(stdin, stdout, n); break;
      case 9: failed = row<gf::Q6_K>(stdin, stdout, n); break;
      case 10: failed = row<gf::F16>(stdin, stdout, n); break;
      case 11: failed = row<gf::BF16>(stdin, stdout, n); break;
      default: return 1;
    }
    if (failed) return 1;
  }
  return fflush(stdout) == 0 ? 0 : 1;
}
