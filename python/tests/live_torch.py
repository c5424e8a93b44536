#!/usr/bin/env python3
"""Live tests with a real torch (2.5 or later): export of modules that cover every op of the format, the .pt2
path, unmapped ops becoming `custom`, and a real Inductor plan capture. Exits 77 (skipped) where torch is
missing or too old; CTest reads that as skipped.

    python3 python/tests/live_torch.py [--device cuda] [--record DIR]

--record DIR writes each capture as DIR/<name>.<device>.capture.json (the fixtures CI converts; each names
the torch version it came from). fusion-cli (FX_CLI, or build*/app/cli/fusion-cli) validates every graph."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

SKIPPED = 77
MIN_TORCH = (2, 5)
OPTIONS = {"device": "cpu", "record": None}


def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    return torch if version >= MIN_TORCH and hasattr(torch, "export") else None


def cover_all_ops():
    """One module whose export uses every op family the format has (see the format's op list)."""
    import torch
    F = torch.nn.functional

    class Everything(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(4, 8, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.ln = torch.nn.LayerNorm(16)
            self.fc = torch.nn.Linear(16, 16)
            self.rms_w = torch.nn.Parameter(torch.ones(16))

        def forward(self, img, x, mask):
            y = F.max_pool2d(torch.relu(self.bn(self.conv(img))), 2)          # conv2d batchnorm relu max_pool2d
            pooled = F.adaptive_avg_pool2d(y, 1).flatten(1)                   # mean reshape
            h = self.ln(x)                                                    # layernorm
            h = F.gelu(self.fc(h)) + F.gelu(h, approximate="tanh")            # matmul add gelu gelu_tanh
            h = F.rms_norm(h, (16,), self.rms_w) if hasattr(F, "rms_norm") else h  # rmsnorm
            s = torch.softmax(h @ h.transpose(-1, -2), dim=-1)                # transpose matmul softmax
            u = torch.sigmoid(s).sum(-1) + torch.tanh(s).amax(-1) - s.amin(-1) * s.mean(-1)  # reductions
            e = torch.exp(-x.abs()).sqrt().rsqrt().reciprocal().log() / 2.0  # neg abs exp sqrt rsqrt recip log div
            t = torch.sin(e) * torch.cos(e) + torch.erf(e) + F.silu(e) + e.square() + torch.pow(e, 2.0)
            c = torch.where(mask, torch.maximum(t, e), torch.minimum(t, e))   # where maximum minimum
            cmp = (c > 0) & (c >= 0) & (c < 1) & (c <= 1) & (c == c)          # gt ge lt le eq
            cat = torch.cat([c[..., :8], cmp.to(torch.float32)[..., 8:]], -1)  # slice cast concat
            vals, _ = torch.topk(cat, 4, dim=-1)                              # topk
            srt, _ = torch.sort(cat, dim=-1)                                  # sort
            return pooled, u, vals, srt, torch.nn.functional.dropout(cat, 0.0, False)

    return (Everything().eval(),
            (torch.randn(2, 4, 8, 8), torch.randn(2, 8, 16), torch.rand(2, 8, 16) > 0.5), "all_ops",
            "a module whose export uses every op family of the format")


def unmapped_ops():
    import torch

    class Unmapped(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(torch.nn.functional.avg_pool2d(x, 2), dim=-1)

    return Unmapped().eval(), (torch.randn(1, 3, 8, 8),), "unmapped", "ops without a mapping"


def find_cli():
    from test_aten import find_cli as find
    return find()


class LiveTorchTest(unittest.TestCase):
    def export(self, factory):
        from fusion_explorer import export
        ep, _, _, name, desc = export.capture(factory, [], OPTIONS["device"])
        return ep, export.export_program(ep, name, desc)

    def validate(self, graph):
        cli = find_cli()
        if not cli:
            return
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(graph, f)
        try:
            proc = subprocess.run([cli, "validate", f.name], capture_output=True, text=True)
        finally:
            os.unlink(f.name)
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_every_op_of_the_format_is_exported_with_sources(self):
        _, (graph, fallbacks, origins) = self.export("live_torch:cover_all_ops")
        ops = {n["op"] for n in graph["nodes"]}
        expected = {"conv2d", "batchnorm", "relu", "max_pool2d", "mean", "layernorm", "matmul", "add", "gelu",
                    "gelu_tanh", "transpose", "softmax", "sigmoid", "sum", "tanh", "max", "min", "sub", "mul",
                    "exp", "neg", "abs", "sqrt", "rsqrt", "reciprocal", "log", "div", "sin", "cos", "erf", "silu",
                    "where", "maximum", "minimum", "gt", "lt", "slice", "cast", "concat", "topk", "sort"}
        self.assertEqual(expected - ops, set(), f"fallbacks: {fallbacks}")
        here = [n for n in graph["nodes"] if n.get("source", "").startswith("python/tests/live_torch.py:")
                or "live_torch.py:" in n.get("source", "")]
        self.assertGreater(len(here), len(graph["nodes"]) // 2, "most nodes name a line of this file")
        self.assertTrue(all(isinstance(v, list) and v for v in origins.values()))
        self.validate(graph)

    def test_unmapped_ops_become_custom_with_a_warning(self):
        _, (graph, fallbacks, _) = self.export("live_torch:unmapped_ops")
        labels = {n["attrs"]["label"] for n in graph["nodes"] if n["op"] == "custom"}
        self.assertIn("avg_pool2d", labels)
        self.assertTrue(any(op == "cumsum" for op, _ in fallbacks), fallbacks)
        self.validate(graph)

    def test_a_saved_program_exports_like_the_module(self):
        import torch
        from fusion_explorer import export
        ep, (graph, _, _) = self.export("fusion_explorer.models:mlp")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mlp.pt2")
            torch.export.save(ep, path)
            out = os.path.join(d, "mlp.json")
            self.assertEqual(export.main([path, "-o", out]), 0)
            again = json.load(open(out))
        self.assertEqual([n["op"] for n in again["nodes"]], [n["op"] for n in graph["nodes"]])

    def test_inductor_capture_maps_kernels_to_graph_nodes(self):
        from fusion_explorer import graph_format, inductor, inductor_plan
        cap = inductor.capture("fusion_explorer.models:mlp", [], OPTIONS["device"])
        plan = graph_format.read_plan(inductor_plan.to_plan(cap))
        groups = plan["fusion"]["groups"]
        self.assertTrue(cap["schedulers"], "the scheduler ran")
        self.assertGreater(cap["matched"]["by_graph_identity"] + cap["matched"]["by_name"], 0)
        launched = [g for g in groups if g["kernel"]]
        self.assertGreater(len(launched), 0)
        self.assertTrue(any(g["library"] for g in groups) or OPTIONS["device"] == "cpu",
                        "on the GPU the linears run as library mm calls")
        self.assertTrue(any(len(g["nodes"]) > 1 for g in groups), "Inductor fused something")
        if OPTIONS["record"]:
            os.makedirs(OPTIONS["record"], exist_ok=True)
            for factory in ("fusion_explorer.models:mlp", "live_torch:cover_all_ops"):
                c = cap if factory.endswith("mlp") else inductor.capture(factory, [], OPTIONS["device"])
                name = factory.split(":")[1]
                graph_format.write_json(c, os.path.join(OPTIONS["record"],
                                                        f"{name}.{OPTIONS['device'].split(':')[0]}.capture.json"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default=os.environ.get("FX_TORCH_DEVICE", "cpu"))
    p.add_argument("--record", metavar="DIR")
    args, rest = p.parse_known_args()
    torch = torch_or_none()
    if torch is None:
        print(f"skipped: needs torch {'.'.join(map(str, MIN_TORCH))} or later with torch.export "
              "(pip install torch); this machine has none or an older one")
        return SKIPPED
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("skipped: --device cuda but no CUDA device is visible")
        return SKIPPED
    OPTIONS.update(device=args.device, record=args.record)
    print(f"torch {torch.__version__} on {args.device}")
    result = unittest.main(argv=[sys.argv[0]] + rest, exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
