#!/usr/bin/env bash
# Compiler launcher of the sm_90a kernels (src/CMakeLists.txt, with
# HRMT_WERROR): runs the compile and fails it when ptxas says that it
# serialised wgmma instructions. ptxas prints that (C7514, C7520: "Potential
# Performance Loss") as an info line, not a warning, and a kernel built so
# runs its tensor-core products one after another: accumulators the compiler
# carried as integers into the first product did it twice (docs/CUDA-KERNELS.md).
log=$(mktemp) || exit 1
"$@" 2>"$log"
rc=$?
cat "$log" >&2
if grep -q 'wgmma[.a-z_]* instructions are serialized' "$log"; then
  echo "ptxas_guard: ptxas serialised wgmma instructions (above); see docs/CUDA-KERNELS.md" >&2
  [ $rc -eq 0 ] && rc=1
fi
rm -f "$log"
exit $rc
