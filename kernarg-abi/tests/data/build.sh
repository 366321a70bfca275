#!/bin/sh
# Rebuilds the code-object fixtures with clang-19 (LLVM 19.1.7). Run from this directory.
# The fixtures are checked in; tests never run this script.
set -eu
CC="clang-19 -x hip -nogpulib -nogpuinc --cuda-device-only -fuse-cuid=none -O3"
for t in gfx1030 gfx1100 gfx1151 gfx1200 gfx1201; do
  $CC --no-gpu-bundle-output --offload-arch=$t kernels.hip -o kernels-$t.co
done
$CC --no-gpu-bundle-output --offload-arch=gfx1100 -mcode-object-version=4 kernels.hip -o kernels-gfx1100-v4.co
$CC --no-gpu-bundle-output --offload-arch=gfx1100 -mcode-object-version=6 kernels.hip -o kernels-gfx1100-v6.co
$CC --no-gpu-bundle-output --offload-arch=gfx1030 -mwavefrontsize64 kernels.hip -o kernels-gfx1030-wave64.co
$CC --no-gpu-bundle-output --offload-arch=gfx90a:sramecc-:xnack+ add.hip -o add-gfx90a-xnack.co
$CC --offload-arch=gfx1100 --offload-arch=gfx1201 add.hip -o add-gfx1100-gfx1201.bundle
