"""Session 30 run 6 (under ncu): torch.compile's rms_norm and layer_norm over 16 rows of 1024
bf16, a few calls each, so that ncu profiles Triton's kernels beside kiln's."""
import torch
import torch.nn.functional as F
x = torch.randn(16, 1024, device="cuda").to(torch.bfloat16)
w = torch.randn(1024, device="cuda").to(torch.bfloat16)
b = torch.randn(1024, device="cuda").to(torch.bfloat16)
rms = torch.compile(lambda: F.rms_norm(x, (1024,), w, 1e-5))
ln = torch.compile(lambda: F.layer_norm(x, (1024,), w, b, 1e-5))
for _ in range(3):
    rms(); ln()
torch.cuda.synchronize()
