// Test kernels for kernarg-abi. No HIP headers: built with -nogpulib -nogpuinc.
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))

// Explicit arguments only: two pointers and an int.
extern "C" __global__ void add(float* a, const float* b, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  if (i < n) a[i] += b[i];
}

// Reads the work-group size (a hidden argument under code object v5).
extern "C" __global__ void dims(unsigned* out) {
  unsigned i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x()
             + __builtin_amdgcn_workitem_id_x();
  out[i] = __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workgroup_size_y();
}

// Dynamically sized LDS (extern __shared__) after 64 bytes of static LDS.
extern __shared__ float dyn[];
extern "C" __global__ void dyn_lds(float* out, char pad, double scale) {
  __shared__ float fixed[16];
  unsigned t = __builtin_amdgcn_workitem_id_x();
  fixed[t & 15] = pad;
  dyn[t] = out[t] * scale + fixed[(t + 3) & 15];
  __builtin_amdgcn_s_barrier();
  out[t] = dyn[(t + 1) & 63];
}

// Reads the dispatch packet through the dispatch pointer.
extern "C" __global__ void dispatch_ptr(unsigned* out) {
  const unsigned short* p = (const unsigned short*)__builtin_amdgcn_dispatch_ptr();
  out[__builtin_amdgcn_workitem_id_x()] = p[2];
}

// A dynamically indexed private array forces scratch.
extern "C" __global__ void scratch(int* out, int k) {
  int a[64];
  for (int i = 0; i < 64; ++i) a[i] = out[i] * k;
  out[0] = a[out[1] & 63] + a[k & 63];
}

// By-value arguments whose alignment is not their size: a 2-byte struct of chars at offset 1.
struct C2 { char a, b; };
struct F2 { float x, y; };
extern "C" __global__ void by_value(char c, C2 p, int i, F2 f, float* o) {
  o[0] = c + p.a + p.b + i + f.x + f.y;
}
