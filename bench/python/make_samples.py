#!/usr/bin/env python3
"""Writes the sample graphs in sample_graphs/ (graph format version 1).

The samples are the workshop's worked examples and the benchmark's workloads, so they are generated from
one place: shapes stay consistent, and every file is checked by fx_graph's shape inference before it is
written. Run: python3 bench/python/make_samples.py [--out DIR] [--check]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fx_graph  # noqa: E402

N2D = [8192, 8192]          # 67108864 elements, 256 MiB in f32; 2-D so transposes and row views exist
ROWS = [16384, 4096]        # row-wise reductions: 64M elements, 4096 per row


def inp(name, shape, dtype="f32", role=None):
    d = {"name": name, "shape": shape, "dtype": dtype}
    if role:
        d["role"] = role
    return d


def node(name, op, inputs, **attrs):
    d = {"name": name, "op": op, "inputs": inputs}
    if attrs:
        d["attrs"] = attrs
    return d


def graph(name, description, inputs, nodes, outputs):
    return {"format": fx_graph.FORMAT, "version": fx_graph.VERSION, "name": name,
            "description": description, "inputs": inputs, "nodes": nodes, "outputs": outputs}


def elementwise_samples():
    yield graph(
        "relu_mul_add",
        "relu(x*w + b) on 64M f32 elements. Three elementwise ops fuse into one kernel: unfused they read "
        "5 and write 3 tensors of 256 MiB, fused they read 3 and write 1, so the intermediates never touch DRAM.",
        [inp("x", N2D), inp("w", N2D, role="weight"), inp("b", N2D, role="weight")],
        [node("mul", "mul", ["x", "w"]), node("add", "add", ["mul", "b"]), node("y", "relu", ["add"])],
        ["y"])
    yield graph(
        "sigmoid_chain",
        "sigmoid(relu(x*w + b) * c): a chain of five elementwise ops becomes one kernel. Unfused it moves "
        "13 tensors of 256 MiB through DRAM, fused only 5 (four inputs, one output): about 2.6x less traffic.",
        [inp("x", N2D), inp("w", N2D, role="weight"), inp("b", N2D, role="weight"),
         inp("c", N2D, role="weight")],
        [node("mul", "mul", ["x", "w"]), node("add", "add", ["mul", "b"]), node("relu", "relu", ["add"]),
         node("scale", "mul", ["relu", "c"]), node("y", "sigmoid", ["scale"])],
        ["y"])
    yield graph(
        "gelu_tanh_decomposed",
        "GELU (tanh form) written out as 9 primitive ops with scalar literals, as a framework traces it. "
        "Unfused that is 9 kernels and 8 round trips of intermediates; fused it is one kernel that reads x "
        "once and writes y once, the same traffic as a hand-written GELU.",
        [inp("x", N2D)],
        [node("x2", "mul", ["x", "x"]), node("x3", "mul", ["x2", "x"]),
         node("cx3", "mul", ["x3", 0.044715]), node("inner", "add", ["x", "cx3"]),
         node("scaled", "mul", ["inner", 0.7978845608]), node("t", "tanh", ["scaled"]),
         node("onep", "add", ["t", 1.0]), node("halfx", "mul", ["x", 0.5]),
         node("y", "mul", ["halfx", "onep"])],
        ["y"])
    yield graph(
        "sin_cos",
        "sin(x) and cos(x) of the same x: two consumers of one input fuse into one kernel with two outputs "
        "(multi-output fusion), so x is read once instead of twice.",
        [inp("x", N2D)],
        [node("s", "sin", ["x"]), node("c", "cos", ["x"])],
        ["s", "c"])
    yield graph(
        "exp_two_consumers",
        "a = exp(x) feeds both a*2 and a+1. Fusing the producer into both consumers recomputes nothing "
        "expensive and never writes a: one kernel reads x and writes two outputs.",
        [inp("x", N2D)],
        [node("a", "exp", ["x"]), node("y1", "mul", ["a", 2.0]), node("y2", "add", ["a", 1.0])],
        ["y1", "y2"])
    yield graph(
        "dropout_chain",
        "relu(dropout(x*w, p=0.1) + 1): dropout's mask comes from a counter-based generator (Philox keyed "
        "by seed and element index), so it is recomputed inside the fused kernel instead of stored: "
        "one kernel, no mask tensor in memory.",
        [inp("x", N2D), inp("w", N2D, role="weight")],
        [node("mul", "mul", ["x", "w"]), node("drop", "dropout", ["mul"], p=0.1, seed=0),
         node("add", "add", ["drop", 1.0]), node("y", "relu", ["add"])],
        ["y"])
    yield graph(
        "transpose_chain",
        "((x*w) transposed) + 1, then relu on 8192x8192: a transpose between elementwise ops is only an "
        "index remapping, so all four ops can become one kernel that reads x and w once and writes y once.",
        [inp("x", N2D), inp("w", N2D, role="weight")],
        [node("mul", "mul", ["x", "w"]), node("tr", "transpose", ["mul"], perm=[1, 0]),
         node("add", "add", ["tr", 1.0]), node("y", "relu", ["add"])],
        ["y"])
    yield graph(
        "cast_chain",
        "relu(x*2) cast to f16, plus 1, cast back to f32: dtype casts are elementwise too, so the whole "
        "chain fuses; the f16 intermediate exists only in registers (and rounds the values like the "
        "unfused chain does).",
        [inp("x", N2D)],
        [node("mul", "mul", ["x", 2.0]), node("relu", "relu", ["mul"]),
         node("h", "cast", ["relu"], dtype="f16"), node("add", "add", ["h", 1.0]),
         node("y", "cast", ["add"], dtype="f32")],
        ["y"])
    yield graph(
        "concat_branches",
        "Three pointwise branches (relu, tanh, a scale) concatenated on the last axis, then silu: unfused 5 "
        "kernels; fused one kernel that loops over the concat's output and computes each branch where its slice "
        "is written, so no branch is stored (TorchInductor's pointwise cat: 1 kernel).",
        [inp("x", [4096, 1024]), inp("y", [4096, 1024]), inp("z", [4096, 1024])],
        [node("rx", "relu", ["x"]), node("ty", "tanh", ["y"]), node("sz", "mul", ["z", 0.5]),
         node("cat", "concat", ["rx", "ty", "sz"], axis=-1), node("out", "silu", ["cat"])],
        ["out"])


def reduction_samples():
    yield graph(
        "softmax",
        "softmax over the last axis of 16384x4096 f32 as one op: the baseline for its decomposed form. "
        "A single row-wise kernel reads x once and writes y once.",
        [inp("x", ROWS)],
        [node("y", "softmax", ["x"], axis=-1)],
        ["y"])
    yield graph(
        "softmax_decomposed",
        "softmax written as max, sub, exp, sum, div: two reductions and three elementwise ops. Fusing the "
        "elementwise ops into the row reductions gives one row-wise kernel (reduction fusion): 5 kernels "
        "and 4 intermediates become 1 kernel that reads x once.",
        [inp("x", ROWS)],
        [node("mx", "max", ["x"], axis=-1, keepdim=True), node("sub", "sub", ["x", "mx"]),
         node("e", "exp", ["sub"]), node("s", "sum", ["e"], axis=-1, keepdim=True),
         node("y", "div", ["e", "s"])],
        ["y"])
    yield graph(
        "layernorm",
        "layernorm over the last axis of 16384x4096 f32 with gamma/beta [4096]: one row-wise reduction "
        "kernel; the baseline for the residual sample.",
        [inp("x", ROWS), inp("gamma", [4096], role="weight"), inp("beta", [4096], role="weight")],
        [node("y", "layernorm", ["x", "gamma", "beta"], axis=-1, eps=1e-5)],
        ["y"])
    yield graph(
        "residual_layernorm",
        "add(x, r) then layernorm: the residual add fuses into the layernorm's input, so the sum is never "
        "written: 2 kernels and 5 tensor passes become 1 kernel and 3 (read x, read r, write y).",
        [inp("x", ROWS), inp("r", ROWS), inp("gamma", [4096], role="weight"),
         inp("beta", [4096], role="weight")],
        [node("h", "add", ["x", "r"]), node("y", "layernorm", ["h", "gamma", "beta"], axis=-1, eps=1e-5)],
        ["y"])
    yield graph(
        "sum_of_squares",
        "square then sum over the last axis of 16384x4096: the elementwise producer fuses into the "
        "reduction's input, so the squared tensor (256 MiB) is never written or read back.",
        [inp("x", ROWS)],
        [node("sq", "square", ["x"]), node("y", "sum", ["sq"], axis=-1)],
        ["y"])
    yield graph(
        "mean_variance",
        "Mean and variance of each row of 16384x2048 f32 as mean(x) and mean(x*x) - mean(x)^2, with the row "
        "maximum beside them: unfused 6 kernels, three of them reductions of x; fused one row-wise kernel with "
        "three outputs that reads x once (XLA's multi-output fusion of sibling reductions).",
        [inp("x", [16384, 2048])],
        [node("mean", "mean", ["x"], axis=-1), node("sq", "mul", ["x", "x"]),
         node("mean_sq", "mean", ["sq"], axis=-1), node("mean2", "mul", ["mean", "mean"]),
         node("var", "sub", ["mean_sq", "mean2"]), node("peak", "max", ["x"], axis=-1)],
        ["mean", "var", "peak"])


def matmul_samples():
    yield graph(
        "mlp_relu_f32",
        "relu(x@W + b), 8192x4096x4096 f32 (TF32 tensor cores): bias and relu fuse into the GEMM's "
        "epilogue (cuBLASLt RELU_BIAS), saving two passes over the 128 MiB product.",
        [inp("x", [8192, 4096]), inp("W", [4096, 4096], role="weight"), inp("b", [4096], role="weight")],
        [node("mm", "matmul", ["x", "W"]), node("add", "add", ["mm", "b"]), node("y", "relu", ["add"])],
        ["y"])
    yield graph(
        "mlp_gelu_bf16",
        "gelu(x@W + b), 8192x4096x4096 bf16, with GELU in its tanh form (gelu_tanh), which is what "
        "cuBLASLt's GELU_BIAS epilogue computes: bias and activation fuse into the GEMM, no extra pass.",
        [inp("x", [8192, 4096], "bf16"), inp("W", [4096, 4096], "bf16", "weight"),
         inp("b", [4096], "bf16", "weight")],
        [node("mm", "matmul", ["x", "W"]), node("add", "add", ["mm", "b"]), node("y", "gelu_tanh", ["add"])],
        ["y"])
    yield graph(
        "mlp_gelu_erf_bf16",
        "gelu(x@W + b), 8192x4096x4096 bf16, with PyTorch's default exact GELU (erf): cuBLASLt's GELU epilogue is "
        "the tanh approximation, so the GEMM, the bias and the GELU run as one cuDNN matmul graph instead (where "
        "cuDNN has no engine for it, the bias fuses into cuBLASLt's GEMM and the GELU is a second kernel).",
        [inp("x", [8192, 4096], "bf16"), inp("W", [4096, 4096], "bf16", "weight"),
         inp("b", [4096], "bf16", "weight")],
        [node("mm", "matmul", ["x", "W"]), node("add", "add", ["mm", "b"]), node("y", "gelu", ["add"])],
        ["y"])
    h = "h"
    yield graph(
        "mlp_gelu_decomposed_bf16",
        "x@W + b, 8192x4096x4096 bf16, then the tanh GELU written out op by op as Hugging Face's GPT-2 writes it "
        "(0.5 h (1 + tanh(0.79788456 (h + 0.044715 h^3)))): h is read four times, so the ops after the GEMM form "
        "a DAG, not a chain. cuBLASLt's epilogue takes a chain only; cuDNN's matmul graph takes the DAG, so the "
        "GEMM and all ten ops are one call.",
        [inp("x", [8192, 4096], "bf16"), inp("W", [4096, 4096], "bf16", "weight"),
         inp("b", [4096], "bf16", "weight")],
        [node("mm", "matmul", ["x", "W"]), node(h, "add", ["mm", "b"]), node("h2", "mul", [h, h]),
         node("h3", "mul", ["h2", h]), node("ch3", "mul", ["h3", 0.044715]), node("inner", "add", [h, "ch3"]),
         node("scaled", "mul", ["inner", 0.7978845608]), node("t", "tanh", ["scaled"]),
         node("onep", "add", ["t", 1.0]), node("halfh", "mul", [h, 0.5]), node("y", "mul", ["halfh", "onep"])],
        ["y"])
    yield graph(
        "mlp_layerscale_bf16",
        "x + gamma * (h@W + b), 8192x4096x4096 bf16: the output projection of a vision transformer's block with "
        "LayerScale (a learned per-channel gamma) and the residual. cuBLASLt's epilogue adds the bias but has no "
        "multiply by a vector, so it stops there; cuDNN's matmul graph takes the bias, the gamma and the residual in "
        "the GEMM's call.",
        [inp("h", [8192, 4096], "bf16"), inp("W", [4096, 4096], "bf16", "weight"),
         inp("b", [4096], "bf16", "weight"), inp("gamma", [4096], "bf16", "weight"), inp("x", [8192, 4096], "bf16")],
        [node("mm", "matmul", ["h", "W"]), node("biased", "add", ["mm", "b"]),
         node("scaled", "mul", ["biased", "gamma"]), node("y", "add", ["x", "scaled"])],
        ["y"])
    yield graph(
        "mlp_relu_small_bf16",
        "relu(x@W + b), 512x1024x1024 bf16: a small GEMM where launch overhead dominates, so folding bias "
        "and relu into the epilogue saves two launches more than it saves bytes.",
        [inp("x", [512, 1024], "bf16"), inp("W", [1024, 1024], "bf16", "weight"),
         inp("b", [1024], "bf16", "weight")],
        [node("mm", "matmul", ["x", "W"]), node("add", "add", ["mm", "b"]), node("y", "relu", ["add"])],
        ["y"])
    yield graph(
        "swiglu_bf16",
        "SwiGLU: silu(x@W1) * (x@W3), 8192x4096x4096 bf16. cuBLASLt has no silu epilogue, so the two GEMMs share "
        "x as one horizontal GEMM on [W1|W3] and silu(g)*u is one elementwise kernel: 2 kernels instead of 4; "
        "the GEMMs stay compute-bound, so the gain is small.",
        [inp("x", [8192, 4096], "bf16"), inp("W1", [4096, 4096], "bf16", "weight"),
         inp("W3", [4096, 4096], "bf16", "weight")],
        [node("g", "matmul", ["x", "W1"]), node("u", "matmul", ["x", "W3"]), node("act", "silu", ["g"]),
         node("y", "mul", ["act", "u"])],
        ["y"])
    yield graph(
        "qkv_bf16",
        "Q, K, V projections of x (8192x4096) by three 4096x1024 bf16 weights: horizontal fusion into one "
        "GEMM on concatenated weights is legal, but these GEMMs are compute-bound and x is read from L2 "
        "either way, so the expected saving is about zero.",
        [inp("x", [8192, 4096], "bf16"), inp("Wq", [4096, 1024], "bf16", "weight"),
         inp("Wk", [4096, 1024], "bf16", "weight"), inp("Wv", [4096, 1024], "bf16", "weight")],
        [node("q", "matmul", ["x", "Wq"]), node("k", "matmul", ["x", "Wk"]), node("v", "matmul", ["x", "Wv"])],
        ["q", "k", "v"])
    yield graph(
        "conv_bn_relu",
        "conv2d 3x3 (pad 1) -> batchnorm (inference) -> relu on 32x64x56x56: batchnorm folds into a "
        "per-channel scale and shift, which with relu fuses after the convolution, saving two passes "
        "over the 25 MiB activation.",
        [inp("x", [32, 64, 56, 56]), inp("w", [64, 64, 3, 3], role="weight"), inp("bias", [64], role="weight"),
         inp("mean", [64], role="weight"), inp("var", [64], role="weight"),
         inp("gamma", [64], role="weight"), inp("beta", [64], role="weight")],
        [node("conv", "conv2d", ["x", "w", "bias"], stride=1, padding=1),
         node("bn", "batchnorm", ["conv", "mean", "var", "gamma", "beta"], eps=1e-5, axis=1),
         node("y", "relu", ["bn"])],
        ["y"])

    yield graph(
        "residual_conv_block",
        "A ResNet basic block on 32x64x56x56 f32: conv 3x3 -> batchnorm -> relu -> conv 3x3 -> batchnorm -> add "
        "the block's input -> relu. The first batchnorm folds into its convolution and the relu is its epilogue; "
        "the convolution epilogue takes no residual add, so the second batchnorm, the add and the last relu are "
        "one elementwise kernel: 3 kernels instead of 7.",
        [inp("x", [32, 64, 56, 56]), inp("w1", [64, 64, 3, 3], role="weight"),
         inp("mean1", [64], role="weight"), inp("var1", [64], role="weight"),
         inp("gamma1", [64], role="weight"), inp("beta1", [64], role="weight"),
         inp("w2", [64, 64, 3, 3], role="weight"),
         inp("mean2", [64], role="weight"), inp("var2", [64], role="weight"),
         inp("gamma2", [64], role="weight"), inp("beta2", [64], role="weight")],
        [node("conv1", "conv2d", ["x", "w1"], stride=1, padding=1),
         node("bn1", "batchnorm", ["conv1", "mean1", "var1", "gamma1", "beta1"], eps=1e-5, axis=1),
         node("relu1", "relu", ["bn1"]),
         node("conv2", "conv2d", ["relu1", "w2"], stride=1, padding=1),
         node("bn2", "batchnorm", ["conv2", "mean2", "var2", "gamma2", "beta2"], eps=1e-5, axis=1),
         node("sum", "add", ["bn2", "x"]),
         node("y", "relu", ["sum"])],
        ["y"])


def gpt2_block():
    b, t, c, h, d, f = 8, 1024, 768, 12, 64, 3072
    w = lambda name, shape: inp(name, shape, role="weight")  # noqa: E731
    inputs = [inp("x", [b, t, c]), inp("mask", [t, t], role="constant"),
              w("ln1_g", [c]), w("ln1_b", [c]),
              w("Wq", [c, c]), w("bq", [c]), w("Wk", [c, c]), w("bk", [c]), w("Wv", [c, c]), w("bv", [c]),
              w("Wo", [c, c]), w("bo", [c]), w("ln2_g", [c]), w("ln2_b", [c]),
              w("Wfc", [c, f]), w("bfc", [f]), w("Wpr", [f, c]), w("bpr", [c])]
    nodes = [node("ln1", "layernorm", ["x", "ln1_g", "ln1_b"], axis=-1, eps=1e-5)]
    for p in "qkv":  # projection, bias, split into heads [b, h, t, d]
        nodes += [node(f"{p}_mm", "matmul", ["ln1", f"W{p}"]),
                  node(f"{p}_b", "add", [f"{p}_mm", f"b{p}"]),
                  node(f"{p}_r", "reshape", [f"{p}_b"], shape=[b, t, h, d]),
                  node(f"{p}_h", "transpose", [f"{p}_r"], perm=[0, 2, 1, 3])]
    nodes += [node("scores", "matmul", ["q_h", "k_h"], transpose_b=True),
              node("scaled", "mul", ["scores", 0.125]),
              node("masked", "add", ["scaled", "mask"]),
              node("probs", "softmax", ["masked"], axis=-1),
              node("ctx", "matmul", ["probs", "v_h"]),
              node("ctx_t", "transpose", ["ctx"], perm=[0, 2, 1, 3]),
              node("merged", "reshape", ["ctx_t"], shape=[b, t, c]),
              node("o_mm", "matmul", ["merged", "Wo"]), node("o_b", "add", ["o_mm", "bo"]),
              node("res1", "add", ["x", "o_b"]),
              node("ln2", "layernorm", ["res1", "ln2_g", "ln2_b"], axis=-1, eps=1e-5),
              node("fc_mm", "matmul", ["ln2", "Wfc"]), node("fc_b", "add", ["fc_mm", "bfc"]),
              node("act", "gelu_tanh", ["fc_b"]),
              node("pr_mm", "matmul", ["act", "Wpr"]), node("pr_b", "add", ["pr_mm", "bpr"]),
              node("y", "add", ["res1", "pr_b"])]
    yield graph(
        "gpt2_block",
        "One GPT-2-small transformer block (batch 8, seq 1024, hidden 768, 12 heads), f32: every fusion kind "
        "in one graph - bias adds into GEMM epilogues, scale+mask+softmax into one row-wise kernel, "
        "residual adds into the layernorms, head split/merge as index remapping. The causal mask is a constant "
        "[1024,1024] input added to the scaled scores (it should hold 0 on and below the diagonal and a large "
        "negative number above; random test values cost the same).",
        inputs, nodes, ["y"])


SAMPLES_ORDER = [
    "relu_mul_add", "sigmoid_chain", "gelu_tanh_decomposed", "softmax", "softmax_decomposed", "layernorm",
    "residual_layernorm", "sum_of_squares", "mlp_relu_f32", "mlp_gelu_bf16", "mlp_relu_small_bf16",
    "swiglu_bf16", "qkv_bf16", "sin_cos", "exp_two_consumers", "conv_bn_relu", "dropout_chain",
    "transpose_chain", "cast_chain", "gpt2_block", "concat_branches", "mean_variance", "mlp_gelu_erf_bf16",
    "residual_conv_block", "mlp_gelu_decomposed_bf16", "mlp_layerscale_bf16"]


def all_samples():
    found = {}
    for gen in (elementwise_samples, reduction_samples, matmul_samples, gpt2_block):
        for g in gen():
            found[g["name"]] = g
    return [found[name] for name in SAMPLES_ORDER]


def dumps(g):
    """Two-space indent, one line per input and per node, like the format's documentation."""
    one = lambda v: json.dumps(v, separators=(", ", ": "))  # noqa: E731
    lines = ["{"]
    keys = list(g.keys())
    for i, key in enumerate(keys):
        comma = "," if i + 1 < len(keys) else ""
        value = g[key]
        if key in ("inputs", "nodes"):
            items = [f"    {one(v)}" for v in value]
            lines.append(f'  "{key}": [\n' + ",\n".join(items) + f"\n  ]{comma}")
        else:
            lines.append(f'  "{key}": {one(value)}{comma}')
    return "\n".join(lines) + "\n}\n"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "sample_graphs"))
    ap.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = ap.parse_args()
    stale = []
    for g in all_samples():
        fx_graph.Graph.from_dict(g)  # raises GraphError on any inconsistency
        path = os.path.join(args.out, g["name"] + ".json")
        text = dumps(g)
        if args.check:
            if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
                stale.append(path)
            continue
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    if stale:
        print("out of date:", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
