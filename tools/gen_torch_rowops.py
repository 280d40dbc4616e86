#!/usr/bin/env python3
"""Writes tests/data/torch-ops/rowops.safetensors: PyTorch's own rms_norm and
softmax outputs for many row lengths, so tests/test_torch_rowops.c can check
that every hrmt table sums in PyTorch's order (short rows, tails, and the
multi-level cascade of SumKernel.cpp that starts at 16 x 32 columns).

Run with the PyTorch build that made the golden files (Debian 12's
python3-torch 1.13.1):  /usr/bin/python3 tools/gen_torch_rowops.py OUT
Tensors, per column count C:
  rms.C.x_f32 / rms.C.y_f32    HRM's rms_norm of an F32 input (eps 1e-5)
  rms.C.x_bf16 / rms.C.y_bf16  the same on a BF16 input (output BF16)
  sm.C.x / sm.C.y              softmax(x * 0.125, -1), F32
"""
import json
import struct
import sys

if __name__ == "__main__" and (len(sys.argv) > 2 or sys.argv[1:2] in (["-h"], ["--help"])):
    print(__doc__)
    sys.exit(0 if len(sys.argv) == 2 else 2)

import torch

COLS = [1, 3, 7, 8, 9, 15, 17, 31, 32, 33, 64, 100, 128, 511, 512, 513, 544, 1000, 1024,
        4096, 7168, 8192, 8200, 9000, 16384 + 40]
ROWS = 2
EPS = 1e-5
SCALE = 0.125


def rms_norm(h, eps):
    """HRM's models/layers.py rms_norm."""
    dt = h.dtype
    h = h.to(torch.float32)
    variance = h.square().mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    return h.to(dt)


def raw(t):
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().tobytes(), "BF16"
    return t.contiguous().numpy().astype("<f4").tobytes(), "F32"


def main(out):
    torch.manual_seed(1234)
    torch.set_num_threads(1)
    tensors = {}
    for c in COLS:
        x = torch.randn(ROWS, c) * 3
        tensors[f"rms.{c}.x_f32"] = x
        tensors[f"rms.{c}.y_f32"] = rms_norm(x, EPS)
        xb = (torch.randn(ROWS, c) * 2).to(torch.bfloat16)
        tensors[f"rms.{c}.x_bf16"] = xb
        tensors[f"rms.{c}.y_bf16"] = rms_norm(xb, EPS)
        s = torch.randn(ROWS, c) * 6
        tensors[f"sm.{c}.x"] = s
        tensors[f"sm.{c}.y"] = torch.softmax(s * SCALE, -1)
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        data, dt = raw(t)
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    header["__metadata__"] = {"source": f"tools/gen_torch_rowops.py, torch {torch.__version__}",
                              "eps": str(EPS), "scale": str(SCALE)}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/torch-ops/rowops.safetensors")
