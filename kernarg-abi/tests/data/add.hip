// One kernel with explicit arguments only, for the bundle and the gfx90a fixture.
#define __global__ __attribute__((global))
extern "C" __global__ void add(float* a, const float* b, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  if (i < n) a[i] += b[i];
}
