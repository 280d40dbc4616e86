# Dumps, for ACT step 0 of a golden case, every level call's z_in, injection and
# z_out (raw bf16, [B, T, hidden]) under the torch-1.13 emulator, for comparing
# hrmt_level call by call:  dump_levels.py GOLD CASE OUTDIR
import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variants as V
import torch
gold, case, out = sys.argv[1:4]
torch.set_num_threads(1)
d = os.path.join(gold, case)
arch = json.load(open(os.path.join(d, "case.json")))["arch"]
m = V.Emu(arch, V.load_file(os.path.join(d, "model.safetensors")), {})
EB = V.load_file(os.path.join(d, "expected-bf16.safetensors"))
os.makedirs(out, exist_ok=True)
calls = []
orig = m.level
def level(name, n, z, inj):
    r = orig(name, n, z, inj)
    i = len(calls)
    calls.append(name)
    for tag, t in (("z", z), ("inj", inj), ("out", r)):
        t.contiguous().view(torch.int16).numpy().tofile(os.path.join(out, "%d.%s" % (i, tag)))
    return r
m.level = level
o = m.run(EB["inputs"], EB["puzzle_identifiers"], 1)
print(calls, "exact z_H:", bool((o[0]["z_H"].float() == EB["step0.z_H"]).all()))
# Per block of level call CALL (env), each block's input and output.
CALL = int(os.environ.get("CALL", "-1"))
if CALL >= 0:
    m.level = orig
    cnt = [0]
    ob, oa = m.block, m.attention
    def block(h, p):
        r = ob(h, p)
        c, cnt[0] = cnt[0], cnt[0] + 1
        if calls_blocks[0] <= c < calls_blocks[1]:
            j = c - calls_blocks[0]
            h.contiguous().view(torch.int16).numpy().tofile(os.path.join(out, "b%d.in" % j))
            r.contiguous().view(torch.int16).numpy().tofile(os.path.join(out, "b%d.out" % j))
        return r
    nl = {"L_level": arch["L_layers"], "H_level": arch["H_layers"]}
    start = sum(nl[n] for n in calls[:CALL])
    calls_blocks = (start, start + nl[calls[CALL]])
    m.block = block
    m.run(EB["inputs"], EB["puzzle_identifiers"], 1)
    print("dumped blocks", calls_blocks)
