#!/usr/bin/env python3
"""Convert an official HRM PyTorch checkpoint to hrmt's model.safetensors + arch.json.

    convert_checkpoint.py CHECKPOINT [--config all_config.yaml | --arch-json arch.json]
                          [--seq-len N] [--out-dir DIR]

CHECKPOINT is a file written by torch.save(model.state_dict()) in the official
repository (a zip holding data.pkl and data/N storages); its keys look like
`_orig_mod.model.inner.H_level.layers.0.mlp.down_proj.weight`. The script needs
only the Python standard library: the pickle is read by a restricted
Unpickler that maps torch's tensor-rebuild functions and storage classes to
plain bytes, so nothing in the file can run code.

The architecture comes from the run's all_config.yaml (its `arch:` section;
the file is found next to the checkpoint when --config is not given) or from a
JSON file holding an `arch` object (--arch-json). Keys the official config takes
from the dataset rather than the YAML are recovered from the weights:
vocab_size (embed_tokens), num_puzzle_identifiers (puzzle_emb.weights) and, for
learned positions, seq_len (embed_pos rows minus the puzzle prefix). With RoPE
seq_len comes from --seq-len or from the dataset.json under the config's
data_path.

Output: DIR/model.safetensors (F32 weights, BF16 H_init/L_init, names
`model.inner.*`, __metadata__ {"format": "pt", "arch": <arch JSON>}) and
DIR/arch.json ({"arch": {...}}, the format `hrmt run --config` reads).
"""

import argparse
import collections
import json
import math
import os
import pickle
import struct
import sys
import zipfile

# ---------------------------------------------------------------------------
# Reading the checkpoint
# ---------------------------------------------------------------------------

# torch storage class -> (safetensors dtype, element size, struct code)
STORAGE_TYPES = {
    "FloatStorage": ("F32", 4, "f"),
    "BFloat16Storage": ("BF16", 2, "H"),
    "HalfStorage": ("F16", 2, "e"),
    "DoubleStorage": ("F64", 8, "d"),
    "IntStorage": ("I32", 4, "i"),
    "LongStorage": ("I64", 8, "q"),
    "BoolStorage": ("BOOL", 1, "?"),
    "ByteStorage": ("U8", 1, "B"),
}


class StorageType:
    def __init__(self, name):
        self.name = name


class Storage:
    def __init__(self, kind, data):
        self.dtype, self.esize, self.code = STORAGE_TYPES[kind]
        self.data = data


class Tensor:
    """A tensor as plain contiguous little-endian bytes."""

    def __init__(self, dtype, esize, code, shape, data):
        self.dtype, self.esize, self.code = dtype, esize, code
        self.shape = list(shape)
        self.data = data

    def numel(self):
        return math.prod(self.shape) if self.shape else 1

    def values(self):
        n = self.numel()
        if self.dtype == "BF16":
            raw = struct.unpack("<%dH" % n, self.data)
            return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in raw]
        return list(struct.unpack("<%d%s" % (n, self.code), self.data))


def rebuild_tensor(storage, offset, size, stride, *_rest):
    size, stride = tuple(size), tuple(stride)
    es = storage.esize
    n = math.prod(size) if size else 1
    contiguous = all(
        stride[i] == math.prod(size[i + 1:]) for i in range(len(size)) if size[i] > 1
    )
    if contiguous:
        data = storage.data[offset * es:(offset + n) * es]
        if len(data) != n * es:
            raise ValueError("tensor runs past the end of its storage")
    else:
        # Gather element by element in row-major order (rare: views saved as is).
        out = bytearray()
        idx = [0] * len(size)
        for _ in range(n):
            pos = offset + sum(i * s for i, s in zip(idx, stride))
            out += storage.data[pos * es:(pos + 1) * es]
            for d in range(len(size) - 1, -1, -1):
                idx[d] += 1
                if idx[d] < size[d]:
                    break
                idx[d] = 0
        data = bytes(out)
    return Tensor(storage.dtype, es, storage.code, size, data)


def rebuild_parameter(data, *_rest):
    return data


class CheckpointUnpickler(pickle.Unpickler):
    """Resolves only what a state_dict needs; anything else is refused."""

    def __init__(self, fp, archive, prefix):
        super().__init__(fp)
        self.archive = archive
        self.prefix = prefix

    def find_class(self, module, name):
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return rebuild_parameter
        if module == "torch" and name in STORAGE_TYPES:
            return StorageType(name)
        raise pickle.UnpicklingError("checkpoint references %s.%s, which a state_dict should not" %
                                     (module, name))

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError("unexpected persistent id %r" % (pid,))
        _tag, stype, key, _location, _numel = pid[:5]
        if not isinstance(stype, StorageType):
            raise pickle.UnpicklingError("unsupported storage type %r" % (stype,))
        data = self.archive.read("%sdata/%s" % (self.prefix, key))
        return Storage(stype.name, data)


def read_checkpoint(path):
    if not zipfile.is_zipfile(path):
        raise SystemExit("%s: not a zip-format torch checkpoint (saved with torch >= 1.6?)" % path)
    with zipfile.ZipFile(path) as z:
        pkl = [n for n in z.namelist() if n.endswith("data.pkl")]
        if len(pkl) != 1:
            raise SystemExit("%s: expected exactly one data.pkl, found %d" % (path, len(pkl)))
        prefix = pkl[0][: -len("data.pkl")]
        with z.open(pkl[0]) as fp:
            obj = CheckpointUnpickler(fp, z, prefix).load()
    if not isinstance(obj, dict):
        raise SystemExit("%s: the pickle holds a %s, not a state_dict" % (path, type(obj).__name__))
    return obj


# ---------------------------------------------------------------------------
# all_config.yaml (the subset the official runs write: nested mappings of
# scalars, two-space indentation, optional lists that we skip)
# ---------------------------------------------------------------------------


def yaml_scalar(text):
    t = text.strip()
    if not t or t in ("null", "~"):
        return None
    if t[0] in "'\"" and t[-1] == t[0]:
        return t[1:-1]
    if t in ("true", "True"):
        return True
    if t in ("false", "False"):
        return False
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return t


def read_yaml(path):
    root = {}
    stack = [(-1, root)]
    with open(path, encoding="utf-8") as fp:
        for lineno, raw in enumerate(fp, 1):
            line = raw.split(" #", 1)[0].rstrip()
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            indent = len(line) - len(line.lstrip(" "))
            body = line.strip()
            if body.startswith("- "):
                continue  # list items: not needed for the architecture
            if ":" not in body:
                raise SystemExit("%s:%d: cannot read '%s'" % (path, lineno, body))
            key, _, rest = body.partition(":")
            while stack and indent <= stack[-1][0]:
                stack.pop()
            parent = stack[-1][1]
            if rest.strip() == "":
                child = {}
                parent[key.strip()] = child
                stack.append((indent, child))
            else:
                parent[key.strip()] = yaml_scalar(rest)
    return root


# ---------------------------------------------------------------------------
# Writing safetensors
# ---------------------------------------------------------------------------


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": metadata}
    offset = 0
    for name in sorted(tensors):
        t = tensors[name]
        header[name] = {"dtype": t.dtype, "shape": t.shape,
                        "data_offsets": [offset, offset + len(t.data)]}
        offset += len(t.data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fp:
        fp.write(struct.pack("<Q", len(text)))
        fp.write(text)
        for name in sorted(tensors):
            fp.write(tensors[name].data)


def to_f32(t):
    """F32 copy of a floating tensor (BF16/F16/F64 widened or narrowed exactly as torch)."""
    if t.dtype == "F32":
        return t
    if t.dtype not in ("BF16", "F16", "F64"):
        raise SystemExit("cannot convert a %s tensor to F32" % t.dtype)
    vals = t.values()
    return Tensor("F32", 4, "f", t.shape, struct.pack("<%df" % len(vals), *vals))


# ---------------------------------------------------------------------------


ARCH_KEYS = ("hidden_size", "num_heads", "expansion", "H_layers", "L_layers", "H_cycles",
             "L_cycles", "puzzle_emb_ndim", "pos_encodings", "halt_max_steps",
             "halt_exploration_prob", "rope_theta", "rms_norm_eps", "forward_dtype",
             "seq_len", "vocab_size", "num_puzzle_identifiers")


def strip_name(name):
    for p in ("_orig_mod.", "model.inner."):
        if name.startswith(p):
            name = name[len(p):]
    return name


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--config", help="all_config.yaml of the run (default: next to the checkpoint)")
    ap.add_argument("--arch-json", help="JSON file with an `arch` object (instead of the YAML)")
    ap.add_argument("--seq-len", type=int, help="sequence length (needed for RoPE models)")
    ap.add_argument("--out-dir", default=".", help="where model.safetensors and arch.json go")
    args = ap.parse_args(argv)

    state = read_checkpoint(args.checkpoint)
    weights = {}
    for name, t in state.items():
        if not isinstance(t, Tensor):
            continue
        short = strip_name(name)
        if short in weights:
            raise SystemExit("tensor %s appears twice (with and without prefixes)" % short)
        weights[short] = t

    if args.arch_json:
        with open(args.arch_json, encoding="utf-8") as fp:
            doc = json.load(fp)
        arch = dict(doc.get("arch", doc))
        cfg_dir = os.path.dirname(os.path.abspath(args.arch_json))
        data_path = None
    else:
        cfg_path = args.config or os.path.join(os.path.dirname(os.path.abspath(args.checkpoint)),
                                               "all_config.yaml")
        if not os.path.exists(cfg_path):
            raise SystemExit("no config: %s does not exist (pass --config or --arch-json)" % cfg_path)
        doc = read_yaml(cfg_path)
        if not isinstance(doc.get("arch"), dict):
            raise SystemExit("%s has no arch: section" % cfg_path)
        arch = dict(doc["arch"])
        cfg_dir = os.path.dirname(os.path.abspath(cfg_path))
        data_path = doc.get("data_path")
    arch = {k: v for k, v in arch.items() if k in ARCH_KEYS}

    for key in ("hidden_size", "num_heads", "expansion", "H_layers", "L_layers", "H_cycles",
                "L_cycles", "pos_encodings", "halt_max_steps"):
        if key not in arch:
            raise SystemExit("the config lacks arch.%s" % key)
    hidden = int(arch["hidden_size"])
    ndim = int(arch.get("puzzle_emb_ndim", 0))
    arch["puzzle_emb_ndim"] = ndim
    plen = -(ndim // -hidden) if ndim > 0 else 0

    if "embed_tokens.embedding_weight" not in weights:
        raise SystemExit("checkpoint lacks embed_tokens.embedding_weight: not an HRM ACT v1 state_dict?")
    arch.setdefault("vocab_size", weights["embed_tokens.embedding_weight"].shape[0])
    if ndim > 0:
        if "puzzle_emb.weights" not in weights:
            raise SystemExit("puzzle_emb_ndim > 0 but the checkpoint lacks puzzle_emb.weights")
        arch.setdefault("num_puzzle_identifiers", weights["puzzle_emb.weights"].shape[0])
    else:
        arch.setdefault("num_puzzle_identifiers", 1)
    if args.seq_len is not None:
        arch["seq_len"] = args.seq_len
    if "seq_len" not in arch and arch["pos_encodings"] == "learned":
        arch["seq_len"] = weights["embed_pos.embedding_weight"].shape[0] - plen
    if "seq_len" not in arch and data_path:
        for split in ("test", "train"):
            meta = os.path.join(data_path if os.path.isabs(data_path) else
                                os.path.join(cfg_dir, data_path), split, "dataset.json")
            if os.path.exists(meta):
                with open(meta, encoding="utf-8") as fp:
                    arch["seq_len"] = int(json.load(fp)["seq_len"])
                break
    if "seq_len" not in arch:
        raise SystemExit("cannot tell seq_len for a RoPE model: pass --seq-len (81 for Sudoku)")
    arch.setdefault("forward_dtype", "bfloat16")
    arch.pop("halt_exploration_prob", None)

    out = {}
    for name, t in weights.items():
        if t.dtype in ("I32", "I64", "BOOL", "U8"):
            print("note: skipping non-float tensor %s (%s)" % (name, t.dtype), file=sys.stderr)
            continue
        # H_init / L_init are forward-dtype buffers: keep BF16 (or F32) as saved.
        keep = name in ("H_init", "L_init") and t.dtype in ("BF16", "F32")
        out["model.inner." + name] = t if keep else to_f32(t)

    os.makedirs(args.out_dir, exist_ok=True)
    arch_text = json.dumps(arch, sort_keys=True)
    write_safetensors(os.path.join(args.out_dir, "model.safetensors"), out,
                      {"format": "pt", "arch": arch_text,
                       "source": "tools/convert_checkpoint.py " + os.path.basename(args.checkpoint)})
    with open(os.path.join(args.out_dir, "arch.json"), "w", encoding="utf-8") as fp:
        json.dump({"arch": arch}, fp, indent=1, sort_keys=True)
        fp.write("\n")
    print("wrote %d tensors to %s (seq_len %d, vocab %d)" %
          (len(out), os.path.join(args.out_dir, "model.safetensors"), arch["seq_len"],
           arch["vocab_size"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
