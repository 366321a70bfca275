#include "device.h"

// The kernel LFM2 needs beyond llama's and Gemma's: the gated short convolution of its
// convolution blocks (llama.cpp's `build_shortconv_block` in src/models/lfm2.cpp: B * x, the
// depthwise causal convolution `ggml_ssm_conv` over the previous d_conv inputs and this one, then
// C * the result). Everything else of an LFM2 step is llama.hip's, gemma.hip's, prefill.hip's,
// ggml_quants.hip's and rmsnorm.hip's.
//
// bcx is one token's in_proj output, [3][dim]: B = bcx[0..dim), C = bcx[dim..2 dim),
// x = bcx[2 dim..3 dim). weight is the GGUF `shortconv.conv` tensor, [dim][d_conv + 1]: channel
// c's taps, the oldest input's first and the current input's last. state is one layer's
// convolution state, [dim][d_conv]: channel c's previous d_conv inputs B * x, oldest first.
//
// One work-item per channel: it alone reads and rewrites its channel's state (an in-place shift
// by one), so the update is race-free and needs no position: what the step reads is what the
// previous step left.

// Channel c of one token, in this order of f32 operations:
//   bx = B[c] * x[c];
//   acc = 0; acc += state[c][k] * weight[c][k] for k = 0 .. d_conv - 1; acc += bx * weight[c][d_conv];
//   state[c][k] = state[c][k + 1] for k = 0 .. d_conv - 2; state[c][d_conv - 1] = bx;
//   out[c] = C[c] * acc.
// (ggml_ssm_conv sums the window, the d_conv state columns and then the new column, in the same
// ascending order from 0.)
static __device__ inline void shortconv_channel(float* out, float* state, const float* bcx, const float* weight,
                                                u32 dim, u32 d_conv, u32 c) {
  float* s = state + (unsigned long)c * d_conv;
  const float* w = weight + (unsigned long)c * ((unsigned long)d_conv + 1);
  float bx = bcx[c] * bcx[2 * (unsigned long)dim + c];
  float acc = 0.0f;
  for (u32 k = 0; k < d_conv; ++k) acc += s[k] * w[k];
  acc += bx * w[d_conv];
  if (d_conv > 0) {
    for (u32 k = 0; k + 1 < d_conv; ++k) s[k] = s[k + 1];
    s[d_conv - 1] = bx;
  }
  out[c] = bcx[(unsigned long)dim + c] * acc;
}

// One token: out[c] for c < dim, the state shifted in place.
KERNEL void shortconv(float* out, float* state, const float* bcx, const float* weight, u32 dim, u32 d_conv) {
  u32 c = global_id_x();
  if (c < dim) shortconv_channel(out, state, bcx, weight, dim, d_conv, c);
}

// n tokens of a prefill pass, bcx [n][3 dim] and out [n][dim]: the work-item of channel c runs
// the tokens in order, each exactly as shortconv does (the recurrence through the state is
// sequential in the tokens, parallel in the channels), so row t and the state after it are bit
// for bit what t + 1 shortconv launches leave.
KERNEL void shortconv_rows(float* out, float* state, const float* bcx, const float* weight, u32 dim, u32 d_conv,
                           u32 n) {
  u32 c = global_id_x();
  if (c >= dim) return;
  for (u32 t = 0; t < n; ++t) {
    shortconv_channel(out + (unsigned long)t * dim, state, bcx + (unsigned long)t * 3 * dim, weight, dim, d_conv, c);
  }
}
