"""Minimal stdlib safetensors reader/writer (shim for hosts without the package)."""
import json, struct
import torch

_DT = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I32": torch.int32,
       "I64": torch.int64, "F64": torch.float64, "U8": torch.uint8, "I8": torch.int8, "BOOL": torch.bool,
       "I16": torch.int16}
_RD = {v: k for k, v in _DT.items()}


def load_file(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    hdr = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        buf = bytearray(data[base + a: base + b])
        dt = _DT[v["dtype"]]
        t = torch.frombuffer(buf, dtype=dt) if len(buf) else torch.empty(0, dtype=dt)
        out[k] = t.reshape(v["shape"]).clone()
    return out


def save_file(tensors, path, metadata=None):
    hdr, blobs, off = {}, [], 0
    for k in sorted(tensors):
        t = tensors[k].contiguous()
        raw = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        hdr[k] = {"dtype": _RD[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    if metadata:
        hdr["__metadata__"] = metadata
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
