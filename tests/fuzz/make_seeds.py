#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets in tests/fuzz/ from the test
fixtures (tests/data, tests/fixtures): OUT/<harness>/<name> for harness in
safetensors, model, config, puzzles, tokens, args. Deterministic; the standard
library only. Run by the build (tests/fuzz/CMakeLists.txt):

    python3 tests/fuzz/make_seeds.py SOURCE_ROOT OUT
"""
import json
import os
import random
import struct
import sys


def read_st(path):
    """(header dict, data bytes) of a safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8 : 8 + n]), blob[8 + n :]


DSIZE = {"F32": 4, "BF16": 2, "I32": 4}


def st_bytes(tensors, metadata=None, pad=True):
    """A safetensors image of [(name, dtype, shape, data bytes)]."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def rand_bytes(rng, dtype, n):
    if dtype == "I32":
        return struct.pack("<%di" % n, *[rng.randrange(-3, 12) for _ in range(n)])
    vals = [rng.uniform(-1, 1) for _ in range(n)]
    f32 = struct.pack("<%df" % n, *vals)
    if dtype == "F32":
        return f32
    return b"".join(f32[4 * i + 2 : 4 * i + 4] for i in range(n))  # bf16: high halves


def safetensors_seeds(root, rng):
    fixtures = [
        "tests/data/golden/hrm/tiny-rope/model.safetensors",
        "tests/data/golden/hrm/tiny-rope/expected-bf16.safetensors",
        "tests/data/golden/hrm/small-learned/expected-f32.safetensors",
        "tests/data/golden/engram/engram-gate.safetensors",
        "tests/data/torch-ops/rowops.safetensors",
        "tests/fixtures/hrm-tiny/reference.safetensors",
    ]
    seeds = {}
    for rel in fixtures:
        header, _ = read_st(os.path.join(root, rel))
        meta = header.pop("__metadata__", None)
        # The fixture's names, dtypes, ranks and metadata with every dimension
        # cut to at most 3, so a seed stays a few hundred bytes.
        tensors = []
        for name, e in list(header.items())[:10]:
            shape = [min(d, 3) for d in e["shape"]]
            tensors.append((name, e["dtype"], shape, rand_bytes(rng, e["dtype"], numel(shape))))
        base = os.path.basename(os.path.dirname(rel)) + "-" + os.path.basename(rel).split(".")[0]
        seeds[base] = st_bytes(tensors, meta)
        seeds[base + "-unpadded"] = st_bytes(tensors[:3], None, pad=False)
    one = [("w", "F32", [2, 2], rand_bytes(rng, "F32", 4))]
    seeds["empty-object"] = st_bytes([])
    seeds["metadata-only"] = st_bytes([], {"arch": "{}", "format": "pt"})
    seeds["scalar"] = st_bytes([("s", "F32", [], rand_bytes(rng, "F32", 1))])
    seeds["zero-size"] = st_bytes([("z", "BF16", [0, 4], b""), ("w", "I32", [1], b"\0" * 4)])
    seeds["eight-dims"] = st_bytes([("d8", "BF16", [1] * 8, b"\0\0")])
    seeds["cut-off"] = st_bytes(one)[:-5]
    seeds["trailing-data"] = st_bytes(one) + b"\0" * 8
    return seeds


# A miniature HRM (hidden 4) in the official layout: what `hrmt run --model`
# loads, a few kilobytes. The config rides in __metadata__ "arch".
def model_arch(learned):
    arch = {"hidden_size": 4, "num_heads": 2, "expansion": 0.5, "H_layers": 1, "L_layers": 1,
            "H_cycles": 1, "L_cycles": 1, "seq_len": 4, "vocab_size": 3,
            "num_puzzle_identifiers": 1, "pos_encodings": "rope", "halt_max_steps": 2,
            "forward_dtype": "bfloat16"}
    if learned:
        arch.update(pos_encodings="learned", puzzle_emb_ndim=6, num_puzzle_identifiers=2,
                    forward_dtype="float32")
    return arch


def model_tensors(arch, rng, dtype, prefix):
    h, v = arch["hidden_size"], arch["vocab_size"]
    inter = (round(arch["expansion"] * h * 2 / 3) + 255) // 256 * 256
    shapes = {"embed_tokens.embedding_weight": [v, h], "H_init": [h], "L_init": [h],
              "q_head.weight": [2, h], "q_head.bias": [2], "lm_head.weight": [v, h]}
    ndim = arch.get("puzzle_emb_ndim", 0)
    plen = (ndim + h - 1) // h if ndim else 0
    if ndim:
        shapes["puzzle_emb.weights"] = [arch["num_puzzle_identifiers"], ndim]
    if arch["pos_encodings"] == "learned":
        shapes["embed_pos.embedding_weight"] = [arch["seq_len"] + plen, h]
    for level, n in (("H_level", arch["H_layers"]), ("L_level", arch["L_layers"])):
        for i in range(n):
            p = "%s.layers.%d." % (level, i)
            shapes[p + "self_attn.qkv_proj.weight"] = [3 * h, h]
            shapes[p + "self_attn.o_proj.weight"] = [h, h]
            shapes[p + "mlp.gate_up_proj.weight"] = [2 * inter, h]
            shapes[p + "mlp.down_proj.weight"] = [h, inter]
    out = []
    for k, s in shapes.items():
        # "mixed": the large matrices BF16, the rest F32 (files mix dtypes).
        dt = dtype if dtype != "mixed" else ("BF16" if numel(s) > 64 else "F32")
        out.append((prefix + k, dt, s, rand_bytes(rng, dt, numel(s))))
    return out


def model_seeds(rng):
    seeds = {}
    for learned, dtype, prefix, name in ((False, "BF16", "model.inner.", "rope-bf16"),
                                         (True, "BF16", "_orig_mod.model.inner.", "learned-orig"),
                                         (False, "mixed", "", "rope-mixed-bare")):
        arch = model_arch(learned)
        meta = {"arch": json.dumps(arch, separators=(",", ":")), "format": "pt"}
        seeds[name] = st_bytes(model_tensors(arch, rng, dtype, prefix), meta)
    arch = model_arch(False)
    meta = {"arch": json.dumps(arch)}
    seeds["missing-tensor"] = st_bytes(model_tensors(arch, rng, "BF16", "model.inner.")[:-1], meta)
    return seeds


def config_seeds(root):
    seeds = {}
    for case in ("tiny-rope", "small-learned"):
        with open(os.path.join(root, "tests/data/golden/hrm", case, "case.json"), "rb") as f:
            text = f.read()
        seeds[case + "-case"] = text
        seeds[case + "-arch"] = json.dumps(json.loads(text)["arch"]).encode()
    seeds["mini-rope"] = json.dumps({"arch": model_arch(False)}, indent=1).encode()
    seeds["mini-learned"] = json.dumps(model_arch(True)).encode()
    return seeds


def golden_inputs(root, case, rel):
    header, data = read_st(os.path.join(root, "tests/data/golden/hrm", case, rel))
    e = header["inputs"]
    b, s = e["shape"]
    lo = e["data_offsets"][0]
    flat = struct.unpack("<%di" % (b * s), data[lo : lo + 4 * b * s])
    return [flat[i * s : (i + 1) * s] for i in range(b)]


def puzzle_seeds(root):
    text = [["." if t < 2 else str(t - 1) for t in row] for row in
            golden_inputs(root, "tiny-rope", "expected-bf16.safetensors")]
    lines = ["".join(r) for r in text]
    zeros = [l.replace(".", "0") for l in lines]
    return {
        "golden": ("\n".join(lines) + "\n").encode(),
        "comments": ("# golden tiny-rope batch\n\n" + lines[0] + "\n# end\n").encode(),
        "crlf-zeros": ("\r\n".join(zeros) + "\r\n").encode(),
        "no-final-newline": lines[1].encode(),
    }


def token_seeds(root):
    rows = golden_inputs(root, "small-learned", "expected-f32.safetensors")
    sp = [" ".join(map(str, r)) for r in rows]
    return {
        "golden": ("\n".join(sp) + "\n").encode(),
        "commas": ("# small-learned\n" + "\n".join(",".join(map(str, r)) for r in rows)).encode(),
        "tabs-crlf": ("\t".join(map(str, rows[0])) + "\r\n\n").encode(),
    }


def args_seeds():
    run = [["--puzzles", "p.txt"],
           ["--tokens", "t.txt", "--model", "m.safetensors", "--config", "arch.json",
            "--steps", "4", "--dtype", "f32", "--schedule", "baseline", "--threads", "2"],
           ["--puzzles=p.txt", "--json", "--dump", "d.safetensors", "--early-halt",
            "--puzzle-id", "3", "--backend", "cpu"],
           ["-h"]]
    bench = [["--mode", "tiered", "--batch-sizes", "1,8,32", "--seq-lens", "64,128"],
             ["--hidden-size", "64", "--num-heads", "4", "--expansion", "2.5", "--H-cycles", "2",
              "--L-cycles", "1", "--H-layers", "1", "--L-layers", "3", "--dtype", "bf16"],
             ["--warmup", "0", "--iterations", "3", "--threads", "1", "-o", "out.json", "-q",
              "--backend", "cuda"]]
    probe = [["--min-bytes", "4K", "--max-bytes", "1GiB", "--quick"],
             ["--json", "--compare", "--threads", "2", "--plot", "tiers.svg", "--quiet"],
             ["--input", "saved.json", "--plot=x.png", "--backend", "cpu"]]
    seeds = {}
    for sel, name, lists in ((0, "run", run), (1, "bench", bench), (2, "probe", probe)):
        for i, a in enumerate(lists):
            seeds["%s-%d" % (name, i)] = bytes([sel]) + b"\0".join(x.encode() for x in a)
    return seeds


def main():
    root, out = sys.argv[1], sys.argv[2]
    rng = random.Random(16)
    corpora = {
        "safetensors": safetensors_seeds(root, rng),
        "model": model_seeds(rng),
        "config": config_seeds(root),
        "puzzles": puzzle_seeds(root),
        "tokens": token_seeds(root),
        "args": args_seeds(),
    }
    for harness, seeds in corpora.items():
        d = os.path.join(out, harness)
        os.makedirs(d, exist_ok=True)
        for name, blob in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(blob)


if __name__ == "__main__":
    main()
