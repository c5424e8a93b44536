"""A graph file as a PyTorch function, with seeded inputs: what bench.py times and crosscheck.py compares.

    fn = build_function(graph)                     # native dtypes, PyTorch's own dropout
    ref = build_function(graph, mode="reference")  # float64; casts still round; dropout keep/drop hypothesis
    outs = fn(make_inputs(graph, "cuda"))          # {output name: tensor}

Semantics follow the format's documentation (broadcasting, axes, epsilons, gelu = erf form, gelu_tanh = tanh
form); fx_codegen.py holds the op-by-op translation. A `custom` node raises fx_codegen.UnsupportedOp.
Dropout: our kernels draw the mask with Philox keyed by (seed, element index), PyTorch draws its own, so values
of dropout graphs are compared per element against both hypotheses plus a statistical check on the dropped
fraction (crosscheck.py explains it); timings use PyTorch's dropout, which does the same work.

Run `python3 bench/python/fx_torch.py GRAPH [--print]` to execute one graph on the GPU and print its outputs'
shapes and norms, or its generated source.
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fx_codegen  # noqa: E402
import fx_graph  # noqa: E402

TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i32": torch.int32,
                "i64": torch.int64, "bool": torch.bool}


class _ReferenceHelpers:
    """Functions the generated reference code calls as `fx.*`."""

    @staticmethod
    def cast_reference(x, dtype):
        # Round to the target type like the graph does, then keep computing in float64.
        y = x.to(dtype)
        return y.to(torch.float64) if y.is_floating_point() else y

    @staticmethod
    def dropout_reference(x, p, hypothesis):
        if hypothesis == "keep":
            return x / (1.0 - p)
        if hypothesis == "drop":
            return torch.zeros_like(x)
        raise ValueError(f"dropout hypothesis {hypothesis!r}")

    @staticmethod
    def batchnorm_on_axis(x, mean, var, gamma, beta, axis, eps):
        view = [1] * x.dim()
        view[axis] = -1
        scale = gamma.reshape(view) * torch.rsqrt(var.reshape(view) + eps)
        return (x - mean.reshape(view)) * scale + beta.reshape(view)


def load_graph(path):
    return fx_graph.Graph.load(path)


def build_function(graph, mode="native"):
    """Compiles the generated source; each call gives a fresh code object (see fx_codegen)."""
    source = fx_codegen.function_source(graph, mode)
    namespace = {"torch": torch, "F": F, "fx": _ReferenceHelpers}
    code = compile(source, f"<fx graph {graph.name} ({mode})>", "exec")
    exec(code, namespace)  # noqa: S102 - our own generated source
    fn = namespace["graph_fn"]
    fn.fx_source = source
    return fn


def _random(ttype, generator, device, positive):
    shape, dtype = ttype.shape, ttype.dtype
    if dtype == "bool":
        return torch.rand(shape, generator=generator, device=device) < 0.5
    if dtype in ("i32", "i64"):
        return torch.randint(1, 100, shape, generator=generator, device=device, dtype=TORCH_DTYPES[dtype])
    x = torch.randn(shape, generator=generator, device=device, dtype=torch.float32)
    if positive:
        x = x.abs_().add_(0.5)
    return x.to(TORCH_DTYPES[dtype])


def make_inputs(graph, device="cuda", seed=0):
    """Seeded random inputs for every graph input, never all zeros: standard normal (positive where an op's
    domain needs it, see fx_codegen.positive_inputs), random bits for bool, 1..99 for integers. Weights of a
    matmul are scaled by 1/sqrt(K) so activations keep unit scale through deep graphs."""
    generator = torch.Generator(device=device)
    positive = fx_codegen.positive_inputs(graph)
    fan_in = {}
    for n in graph.nodes:
        if n.op == "matmul" and isinstance(n.inputs[1], str):
            b = graph.types[n.inputs[1]]
            fan_in[n.inputs[1]] = b.shape[-1] if n.attrs.get("transpose_b") else b.shape[-2]
    inputs = {}
    for index, i in enumerate(graph.inputs):
        generator.manual_seed(seed * 1000 + index)
        x = _random(i.type, generator, device, i.name in positive)
        if i.name in fan_in and x.is_floating_point():
            x = (x.float() * fan_in[i.name] ** -0.5).to(x.dtype)
        inputs[i.name] = x
    return inputs


def upcast(inputs):
    """Float inputs as float64 for the reference; integers and bools unchanged."""
    return {k: (v.to(torch.float64) if v.is_floating_point() else v) for k, v in inputs.items()}


def main():
    ap = argparse.ArgumentParser(description="Run one graph through PyTorch eager.")
    ap.add_argument("graph")
    ap.add_argument("--print", action="store_true", help="print the generated source and exit")
    ap.add_argument("--mode", choices=("native", "reference"), default="native")
    args = ap.parse_args()
    graph = load_graph(args.graph)
    if args.print:
        print(fx_codegen.function_source(graph, args.mode))
        return 0
    fn = build_function(graph, args.mode)
    inputs = make_inputs(graph, "cuda")
    outs = fn(upcast(inputs) if args.mode == "reference" else inputs)
    for name, t in outs.items():
        print(f"{name}: {tuple(t.shape)} {t.dtype} norm {t.double().norm().item():.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
