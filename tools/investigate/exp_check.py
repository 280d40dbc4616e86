# Is SLEEF's scalar Sleef_expf_u10 (what the attention softmax calls) the same
# function as torch 1.13's vectorised exp (Sleef_expf8_u10)?
import ctypes, ctypes.util, torch
lib = ctypes.CDLL(ctypes.util.find_library("sleef") or "libsleef.so.3")
lib.Sleef_expf_u10.restype = ctypes.c_float
lib.Sleef_expf_u10.argtypes = [ctypes.c_float]
torch.manual_seed(0)
x = -(torch.rand(200000) * 30)
t = torch.exp(x)
c = torch.tensor([lib.Sleef_expf_u10(float(v)) for v in x])
print("mismatches", int((t != c).sum()), "of", x.numel())
for name in ("Sleef_expf1_u10purecfma", "Sleef_expf1_u10purec"):
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    c = torch.tensor([fn(float(v)) for v in x])
    print(name, "mismatches", int((t != c).sum()))
