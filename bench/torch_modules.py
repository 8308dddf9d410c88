"""Five transformer pieces in plain PyTorch, for the kiln torch.compile backend's tests
(python/tests/test_dynamo_e2e.py) and benchmark (bench/torch_backend.py).

`build(name, d=...)` makes the module `name` (one of NAMES); `make_inputs(name, module, batch,
seq, device, dtype)` returns the positional inputs of one call. Sizes are small defaults; the
benchmark passes larger ones.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GPT2Block(nn.Module):
    """Pre-LN causal self-attention + GELU(tanh) MLP, with dropout (GPT-2)."""

    def __init__(self, d=256, heads=4, p=0.1):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.view(b, s, h, d // h).transpose(1, 2)
        k = k.view(b, s, h, d // h).transpose(1, 2)
        v = v.view(b, s, h, d // h).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.transpose(1, 2).reshape(b, s, d)
        x = x + self.drop(self.proj(a))
        x = x + self.drop(self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh")))
        return x


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    """RMSNorm, rotary embeddings (cos/sin precomputed as buffers), grouped-query attention
    (k/v heads repeated with expand + reshape), SwiGLU MLP (Llama)."""

    def __init__(self, d=256, heads=8, kv_heads=2, ffn=688, max_seq=512, eps=1e-6):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.norm1 = nn.RMSNorm(d, eps=eps)
        self.norm2 = nn.RMSNorm(d, eps=eps)
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.w1 = nn.Linear(d, ffn, bias=False)
        self.w3 = nn.Linear(d, ffn, bias=False)
        self.w2 = nn.Linear(ffn, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        t = torch.arange(max_seq).float()
        freqs = torch.outer(t, inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def _rope(self, x, s):
        cos = self.cos[:s].to(x.dtype)
        sin = self.sin[:s].to(x.dtype)
        return x * cos + _rotate_half(x) * sin

    def _repeat_kv(self, x):
        b, kvh, s, hd = x.shape
        n = self.heads // kvh
        return x[:, :, None, :, :].expand(b, kvh, n, s, hd).reshape(b, kvh * n, s, hd)

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm1(x)
        q = self.wq(h).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.wk(h).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        v = self.wv(h).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        q, k = self._rope(q, s), self._rope(k, s)
        k, v = self._repeat_kv(k), self._repeat_kv(v)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(a.transpose(1, 2).reshape(b, s, d))
        h = self.norm2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class BertLayer(nn.Module):
    """Post-LN encoder layer with a key padding mask (BERT): attention written out with an
    additive mask, softmax, dropout on the probabilities, GELU(erf) MLP."""

    def __init__(self, d=256, heads=4, p=0.1, eps=1e-12):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.o = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=eps)
        self.fc = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.ln2 = nn.LayerNorm(d, eps=eps)
        self.drop = nn.Dropout(p)

    def forward(self, x, pad_mask):
        # pad_mask: [b, s] bool, True = a real token
        b, s, d = x.shape
        h, hd = self.heads, d // self.heads

        def split(t):
            return t.view(b, s, h, hd).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
        bias = torch.zeros(b, 1, 1, s, dtype=x.dtype, device=x.device).masked_fill(
            ~pad_mask[:, None, None, :], torch.finfo(x.dtype).min)
        probs = self.drop(torch.softmax(scores + bias, dim=-1))
        a = (probs @ v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.drop(self.o(a)))
        return self.ln2(x + self.drop(self.fc2(F.gelu(self.fc(x)))))


class LMHead(nn.Module):
    """Final LayerNorm -> Linear to the vocabulary -> cross-entropy (mean over non-ignored)."""

    def __init__(self, d=256, vocab=1000):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.out = nn.Linear(d, vocab, bias=False)

    def forward(self, x, targets):
        logits = self.out(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1), ignore_index=-100)


class SwiGLU(nn.Module):
    """RMSNorm -> SwiGLU MLP -> residual."""

    def __init__(self, d=256, ffn=688):
        super().__init__()
        self.norm = nn.RMSNorm(d, eps=1e-6)
        self.w1 = nn.Linear(d, ffn, bias=False)
        self.w3 = nn.Linear(d, ffn, bias=False)
        self.w2 = nn.Linear(ffn, d, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


def _x(module, batch, seq, d, device, dtype, gen):
    return torch.randn(batch, seq, d, generator=gen, device="cpu").to(device=device, dtype=dtype)


def _inputs_x(module, batch=2, seq=64, device="cuda", dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    d = module.hidden
    return (_x(module, batch, seq, d, device, dtype, g),)


def _inputs_bert(module, batch=2, seq=64, device="cuda", dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = _x(module, batch, seq, module.hidden, device, dtype, g)
    lengths = torch.randint(seq // 2, seq + 1, (batch,), generator=g)
    mask = torch.arange(seq)[None, :] < lengths[:, None]
    return (x, mask.to(device))


def _inputs_head(module, batch=2, seq=64, device="cuda", dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = _x(module, batch, seq, module.hidden, device, dtype, g)
    t = torch.randint(0, module.vocab, (batch, seq), generator=g)
    t[:, -3:] = -100  # a few ignored positions
    return (x, t.to(device))


def build(name, d=256, **kw):
    """The module `name` with hidden size d (attributes .hidden, .vocab for make_inputs)."""
    if name == "gpt2_block":
        m = GPT2Block(d=d, heads=kw.get("heads", 4), p=kw.get("p", 0.1))
    elif name == "llama_block":
        m = LlamaBlock(d=d, heads=kw.get("heads", 8), kv_heads=kw.get("kv_heads", 2),
                       ffn=kw.get("ffn", (8 * d // 3 + 15) // 16 * 16), max_seq=kw.get("max_seq", 2048))
    elif name == "bert_layer":
        m = BertLayer(d=d, heads=kw.get("heads", 4), p=kw.get("p", 0.1))
    elif name == "lm_head":
        m = LMHead(d=d, vocab=kw.get("vocab", 1000))
        m.vocab = kw.get("vocab", 1000)
    elif name == "swiglu_mlp":
        m = SwiGLU(d=d, ffn=kw.get("ffn", (8 * d // 3 + 15) // 16 * 16))
    else:
        raise KeyError(name)
    m.hidden = d
    return m


INPUTS = {
    "gpt2_block": _inputs_x,
    "llama_block": _inputs_x,
    "bert_layer": _inputs_bert,
    "lm_head": _inputs_head,
    "swiglu_mlp": _inputs_x,
}
NAMES = list(INPUTS)


def make_inputs(name, module, batch=2, seq=64, device="cuda", dtype=torch.float32, seed=0):
    return INPUTS[name](module, batch=batch, seq=seq, device=device, dtype=dtype, seed=seed)
