// Redline's device header: the few HIP spellings the kernels use, defined on clang builtins so
// that no ROCm device library or HIP header is needed (`-nogpulib -nogpuinc`).
#pragma once

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define KERNEL extern "C" __global__ __attribute__((visibility("default")))

typedef unsigned int u32;

// Work-items per work-group in x, read from the hidden group-size argument (code object v5).
static __device__ inline u32 block_dim_x() { return __builtin_amdgcn_workgroup_size_x(); }
static __device__ inline u32 block_id_x() { return __builtin_amdgcn_workgroup_id_x(); }
static __device__ inline u32 thread_id_x() { return __builtin_amdgcn_workitem_id_x(); }
static __device__ inline u32 global_id_x() { return block_id_x() * block_dim_x() + thread_id_x(); }

// Work-group barrier with the LDS visibility a __syncthreads() gives.
static __device__ inline void barrier() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
