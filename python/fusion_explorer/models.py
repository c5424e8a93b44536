"""Ready-made model factories for `python -m fusion_explorer.export fusion_explorer.models:NAME` (and the
tutorial): each returns (module, example inputs, graph name, description). Any factory of the user's own may
return just the module, with the inputs given by --input."""


def resnet18(batch=32):
    import torch
    import torchvision
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(batch, 3, 224, 224)
    return model, (x,), "resnet18", f"torchvision ResNet-18, batch {batch}, 224x224, inference (torch.export)"


def gpt2_block(batch=8, seq=1024):
    import torch
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2Block
    config = GPT2Config(n_embd=768, n_head=12, n_layer=1, n_positions=seq, resid_pdrop=0.0, embd_pdrop=0.0,
                        attn_pdrop=0.0)
    config._attn_implementation = "eager"  # explicit matmul/softmax, not one opaque SDPA call
    block = GPT2Block(config, layer_idx=0).eval()

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = block

        def forward(self, hidden_states, attention_mask):
            out = self.block(hidden_states, attention_mask=attention_mask)
            return out[0] if isinstance(out, (tuple, list)) else out

    x = torch.randn(batch, seq, 768)
    causal = torch.full((seq, seq), torch.finfo(torch.float32).min).triu(1)  # additive causal mask
    mask = causal.expand(batch, 1, seq, seq).contiguous()
    return (Wrapped().eval(), (x, mask), "gpt2_block_hf",
            f"one GPT-2 block from Hugging Face transformers (hidden 768, 12 heads, seq {seq}, batch {batch}, "
            "eager attention with an additive causal mask), captured with torch.export")


def mlp(batch=8, hidden=768):
    """A small MLP block written here (no torchvision or transformers needed): layernorm, two linears with
    GELU, a residual add. Used by the live tests and as the quickest round trip."""
    import torch

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.LayerNorm(hidden)
            self.up = torch.nn.Linear(hidden, 4 * hidden)
            self.down = torch.nn.Linear(4 * hidden, hidden)

        def forward(self, x):
            h = self.up(self.norm(x))
            h = torch.nn.functional.gelu(h)
            return x + self.down(h)

    return MLP().eval(), (torch.randn(batch, 128, hidden),), "mlp", f"LayerNorm + Linear-GELU-Linear + residual"
