#!/usr/bin/env bash
# Record the hardware ground truth legalsat's models are checked against (GPU machine).
#   bash tools/gpu_ground_truth.sh OUTDIR [tma|bank|all]
# tma:  cuTensorMapEncodeTiled verdicts for the generated corpus (tools/tma_probe.py)
# bank: Nsight Compute wavefront counts per shared-memory instruction (tools/bank_probe.py)
# Results are packed as OUTDIR/tma.tar.gz and OUTDIR/bank.tar.gz (plus logs).
set -uo pipefail
out=${1:?usage: gpu_ground_truth.sh OUTDIR [tma|bank|all]}
what=${2:-all}
work=$(mktemp -d)
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; python3 --version;
  python3 -c 'import importlib.metadata as m; print("cuda-bindings", m.version("cuda-bindings"))';
  ncu --version | tail -1; nvcc --version | tail -1; } 2>&1 | tee "$out/machine.txt"
if [[ $what == tma || $what == all ]]; then
  python -m tools.tma_probe --out "$work/tma" ${TMA_ARGS:-} 2>&1 | tee "$out/tma.log"
  tar -C "$work" -czf "$out/tma.tar.gz" tma
fi
if [[ $what == bank || $what == all ]]; then
  python -m tools.bank_probe --out "$work/bank" ${BANK_ARGS:-} 2>&1 | tee "$out/bank.log"
  rm -f "$work/bank/bank_probe"
  tar -C "$work" -czf "$out/bank.tar.gz" bank
fi
