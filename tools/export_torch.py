#!/usr/bin/env python3
"""Exports a PyTorch module to Fusion Explorer's graph format (version 1) through torch.export.

    python3 tools/export_torch.py resnet18 -o resnet18.json [--cli build/app/cli/fusion-cli]
    python3 tools/export_torch.py gpt2-block -o gpt2_block_hf.json [--cli ...]
    python3 tools/export_torch.py --repair graph.json --cli build/app/cli/fusion-cli

torch.export captures the module as ATen ops; each op maps to the format's ops (conv2d, batchnorm, matmul,
layernorm, softmax, elementwise math, reshapes, ...). Ops without a mapping become `custom` nodes labelled
with the ATen name and carrying the shape PyTorch computed, so the graph still opens and shows where fusion
stops. Every node states its shape and dtype from PyTorch's metadata, so `fusion-cli validate` checks each
mapping against PyTorch. With --cli, nodes the tool rejects are turned into `custom` and the file is
validated again (the same fallback the ONNX importer uses); --repair does only that on an existing file.

The mapping (GraphWriter, ATEN, fx_value) is plain Python and imports without torch, so it is unit-tested
on machines without PyTorch (tests/tools/test_export_torch.py).
"""
import argparse
import json
import math
import re
import subprocess
import sys

FORMAT = "fusion-explorer/graph"
TORCH_DTYPES = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16", "torch.int32": "i32",
                "torch.int64": "i64", "torch.bool": "bool", "torch.float64": "f32", "torch.int8": "i32",
                "torch.uint8": "i32", "torch.int16": "i32"}
INT64_MAX = 2**63 - 1


class Unsupported(Exception):
    """The op (or this use of it) has no mapping: the node becomes `custom`."""


class Ref:
    """A tensor in the graph being written, by name."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Ref({self.name!r})"

    def __eq__(self, other):
        return isinstance(other, Ref) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


class GraphWriter:
    """Collects inputs, nodes and outputs, names them uniquely, and writes the format's JSON object."""

    def __init__(self, name, description=""):
        self.name, self.description = name, description
        self.inputs, self.nodes, self.outputs = [], [], []
        self.types = {}  # name -> (shape, dtype)
        self.used = set()

    def fresh(self, base):
        name, k = base, 2
        while name in self.used:
            name, k = f"{base}#{k}", k + 1
        self.used.add(name)
        return name

    def add_input(self, name, shape, dtype, role="activation"):
        name = self.fresh(name)
        entry = {"name": name, "shape": list(shape), "dtype": dtype}
        if role != "activation":
            entry["role"] = role
        self.inputs.append(entry)
        self.types[name] = (list(shape), dtype)
        return Ref(name)

    def add_node(self, name, op, inputs, attrs=None, shape=None, dtype=None):
        name = self.fresh(name)
        node = {"name": name, "op": op, "inputs": [i.name if isinstance(i, Ref) else float(i) for i in inputs]}
        if attrs:
            node["attrs"] = attrs
        if shape is not None:
            node["shape"], node["dtype"] = list(shape), dtype
            self.types[name] = (list(shape), dtype)
        self.nodes.append(node)
        return Ref(name)

    def add_custom(self, name, label, inputs, shape, dtype):
        tensors = [i for i in inputs if isinstance(i, Ref)]
        return self.add_node(name, "custom", tensors, {"label": label}, shape, dtype)

    def to_json(self):
        return {"format": FORMAT, "version": 1, "name": self.name, "description": self.description,
                "inputs": self.inputs, "nodes": self.nodes, "outputs": self.outputs}


def flatten_refs(value):
    """Every Ref inside nested lists/tuples, in order."""
    if isinstance(value, Ref):
        return [value]
    if isinstance(value, (list, tuple)):
        return [r for v in value for r in flatten_refs(v)]
    return []


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _operand(v):
    if isinstance(v, Ref) or _is_number(v):
        return v
    if isinstance(v, bool):
        return float(v)
    raise Unsupported(f"operand {v!r}")


# ---- op handlers: (writer, name, args, kwargs, meta) -> Ref, or a list of Refs for tuple-valued ops.
# meta: {"in": [(shape, dtype) of each tensor arg, in order], "out": (shape, dtype) or a list of those}.

def _out(meta, i=None):
    o = meta["out"]
    return o[i] if i is not None else o


def unary(op):
    def h(w, name, args, kwargs, meta):
        shape, dtype = _out(meta)
        return w.add_node(name, op, [_operand(args[0])], None, shape, dtype)
    return h


def binary(op):
    def h(w, name, args, kwargs, meta):
        a, b = _operand(args[0]), _operand(args[1])
        alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
        if op in ("add", "sub") and alpha != 1:
            if not isinstance(b, Ref):
                b = b * alpha
            else:
                b = w.add_node(f"{name}/alpha", "mul", [b, alpha])
        if kwargs.get("rounding_mode") is not None:
            raise Unsupported("div with rounding_mode")
        if not isinstance(a, Ref) and not isinstance(b, Ref):
            raise Unsupported("no tensor operand")
        shape, dtype = _out(meta)
        return w.add_node(name, op, [a, b], None, shape, dtype)
    return h


def gelu(w, name, args, kwargs, meta):
    approx = kwargs.get("approximate", args[1] if len(args) > 1 else "none")
    shape, dtype = _out(meta)
    return w.add_node(name, "gelu_tanh" if approx == "tanh" else "gelu", [args[0]], None, shape, dtype)


def where(w, name, args, kwargs, meta):
    shape, dtype = _out(meta)
    return w.add_node(name, "where", [_operand(a) for a in args[:3]], None, shape, dtype)


def masked_fill(w, name, args, kwargs, meta):
    x, mask, value = args[0], args[1], args[2]
    shape, dtype = _out(meta)
    return w.add_node(name, "where", [mask, _operand(value), x], None, shape, dtype)


def linear(w, name, args, kwargs, meta):
    x, weight = args[0], args[1]
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    shape, dtype = _out(meta)
    if bias is None:
        return w.add_node(name, "matmul", [x, weight], {"transpose_b": True}, shape, dtype)
    mm = w.add_node(f"{name}/matmul", "matmul", [x, weight], {"transpose_b": True}, shape, dtype)
    return w.add_node(name, "add", [mm, bias], None, shape, dtype)


def matmul(w, name, args, kwargs, meta):
    shapes = [s for s, _ in meta["in"][:2]]
    if any(len(s) < 2 for s in shapes):
        raise Unsupported("matmul of a 1-D operand")
    shape, dtype = _out(meta)
    return w.add_node(name, "matmul", [args[0], args[1]], None, shape, dtype)


def addmm(w, name, args, kwargs, meta):
    bias, a, b = args[0], args[1], args[2]
    if kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1:
        raise Unsupported("addmm with alpha/beta")
    shape, dtype = _out(meta)
    mm = w.add_node(f"{name}/matmul", "matmul", [a, b], None, shape, dtype)
    return w.add_node(name, "add", [mm, bias], None, shape, dtype)


def _pair(v):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * 2 if len(v) == 1 else v


def conv2d(w, name, args, kwargs, meta, transposed=False, groups_at=6):
    """aten.conv2d(x, weight, bias, stride, padding, dilation, groups)."""
    x, weight = args[0], args[1]
    bias = args[2] if len(args) > 2 else None
    if len(meta["in"][0][0]) != 4:
        raise Unsupported("convolution that is not 2-D")
    if transposed:
        raise Unsupported("transposed convolution")
    stride, padding, dilation = (_pair(args[i]) if len(args) > i else [d, d] for i, d in ((3, 1), (4, 0), (5, 1)))
    groups = args[groups_at] if len(args) > groups_at else 1
    if isinstance(padding[0], str):
        raise Unsupported(f"padding={padding[0]!r}")
    shape, dtype = _out(meta)
    ins = [x, weight] + ([bias] if isinstance(bias, Ref) else [])
    attrs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": int(groups)}
    return w.add_node(name, "conv2d", ins, attrs, shape, dtype)


def max_pool2d(w, name, args, kwargs, meta):
    """aten.max_pool2d(x, kernel_size, stride=[] (the kernel size), padding=0, dilation=1, ceil_mode=False)."""
    if len(meta["in"][0][0]) != 4:
        raise Unsupported("pooling that is not 2-D")
    kernel = _pair(args[1])
    stride = _pair(args[2]) if len(args) > 2 and list(args[2] or []) else kernel
    padding = _pair(args[3]) if len(args) > 3 else [0, 0]
    dilation = _pair(args[4]) if len(args) > 4 else [1, 1]
    if (args[5] if len(args) > 5 else kwargs.get("ceil_mode", False)):
        raise Unsupported("ceil_mode=True (the format's max_pool2d rounds down)")
    shape, dtype = _out(meta)
    attrs = {"kernel_size": kernel, "stride": stride, "padding": padding, "dilation": dilation}
    return w.add_node(name, "max_pool2d", [args[0]], attrs, shape, dtype)


def convolution(w, name, args, kwargs, meta):
    """aten.convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups)."""
    return conv2d(w, name, args, kwargs, meta, transposed=bool(args[6]), groups_at=8)


def batch_norm(w, name, args, kwargs, meta):
    # aten.batch_norm(x, weight, bias, mean, var, training, momentum, eps, cudnn_enabled) and
    # aten._native_batch_norm_legit_no_training(x, weight, bias, mean, var, momentum, eps) -> (y, _, _)
    x, gamma, beta, mean, var = args[:5]
    no_training = len(args) == 7
    if not no_training and args[5]:
        raise Unsupported("training-mode batch_norm")
    eps = args[6] if no_training else args[7]
    if not all(isinstance(t, Ref) for t in (gamma, beta, mean, var)):
        raise Unsupported("batch_norm without affine parameters or running statistics")
    out = _out(meta, 0) if isinstance(meta["out"], list) else _out(meta)
    y = w.add_node(name, "batchnorm", [x, mean, var, gamma, beta], {"eps": float(eps)}, *out)
    return [y, None, None] if isinstance(meta["out"], list) else y


def layer_norm(w, name, args, kwargs, meta):
    x, normalized = args[0], args[1]
    gamma = args[2] if len(args) > 2 else None
    beta = args[3] if len(args) > 3 else None
    eps = args[4] if len(args) > 4 else 1e-5
    if gamma is None and beta is not None:
        raise Unsupported("layer_norm with a bias but no weight")
    ins = [x] + [t for t in (gamma, beta) if t is not None]
    shape, dtype = _out(meta)
    return w.add_node(name, "layernorm", ins, {"axis": -len(normalized), "eps": float(eps)}, shape, dtype)


def softmax(w, name, args, kwargs, meta):
    shape, dtype = _out(meta)
    return w.add_node(name, "softmax", [args[0]], {"axis": int(args[1])}, shape, dtype)


def reduce(op):
    def h(w, name, args, kwargs, meta):
        rank = len(meta["in"][0][0])
        dims = args[1] if len(args) > 1 and args[1] is not None else kwargs.get("dim", list(range(rank)))
        dims = [dims] if isinstance(dims, int) else list(dims) or list(range(rank))
        keepdim = bool(args[2] if len(args) > 2 else kwargs.get("keepdim", False))
        if kwargs.get("dtype") is not None:
            raise Unsupported("reduction with a dtype")
        shape, dtype = _out(meta)
        return w.add_node(name, op, [args[0]], {"axis": dims, "keepdim": keepdim}, shape, dtype)
    return h


def adaptive_avg_pool(w, name, args, kwargs, meta):
    if list(args[1]) != [1, 1]:
        raise Unsupported("adaptive pooling to a size other than 1x1")
    shape, dtype = _out(meta)
    return w.add_node(name, "mean", [args[0]], {"axis": [2, 3], "keepdim": True}, shape, dtype)


def transpose(w, name, args, kwargs, meta):
    rank = len(meta["in"][0][0])
    perm = list(range(rank))
    if len(args) >= 3:
        a, b = args[1] % rank, args[2] % rank
        perm[a], perm[b] = perm[b], perm[a]
    elif len(args) == 2:
        perm = [d % rank for d in args[1]]
    else:
        perm = perm[::-1]  # aten.t
    shape, dtype = _out(meta)
    return w.add_node(name, "transpose", [args[0]], {"perm": perm}, shape, dtype)


def reshape(w, name, args, kwargs, meta):
    shape, dtype = _out(meta)
    if list(shape) == list(meta["in"][0][0]):
        return args[0]
    return w.add_node(name, "reshape", [args[0]], {"shape": list(shape)}, shape, dtype)


def identity(w, name, args, kwargs, meta):
    return args[0]


def dropout(w, name, args, kwargs, meta):
    p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
    train = args[2] if len(args) > 2 else kwargs.get("train", False)
    if not train or p == 0:
        return args[0]
    shape, dtype = _out(meta)
    return w.add_node(name, "dropout", [args[0]], {"p": float(p)}, shape, dtype)


def concat(w, name, args, kwargs, meta):
    tensors = [t for t in args[0] if isinstance(t, Ref)]
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    if len(tensors) == 1:
        return tensors[0]
    shape, dtype = _out(meta)
    return w.add_node(name, "concat", tensors, {"axis": int(dim)}, shape, dtype)


def slice_op(w, name, args, kwargs, meta):
    dim = args[1] if len(args) > 1 else 0
    start = args[2] if len(args) > 2 and args[2] is not None else 0
    end = args[3] if len(args) > 3 and args[3] is not None else INT64_MAX
    step = args[4] if len(args) > 4 else 1
    in_shape = meta["in"][0][0]
    shape, dtype = _out(meta)
    if list(shape) == list(in_shape):
        return args[0]
    end = min(int(end), INT64_MAX)
    return w.add_node(name, "slice", [args[0]], {"axis": int(dim), "start": int(start), "end": end, "step": int(step)},
                      shape, dtype)


def select(w, name, args, kwargs, meta):
    x, dim, index = args[0], int(args[1]), int(args[2])
    in_shape, dtype = meta["in"][0]
    index = index + in_shape[dim] if index < 0 else index
    kept = list(in_shape)
    kept[dim] = 1
    s = w.add_node(f"{name}/slice", "slice", [x], {"axis": dim, "start": index, "end": index + 1, "step": 1},
                   kept, dtype)
    shape, dtype = _out(meta)
    return w.add_node(name, "reshape", [s], {"shape": list(shape)}, shape, dtype)


def split(w, name, args, kwargs, meta):
    """aten.split.Tensor(x, size, dim) / split_with_sizes(x, sizes, dim): one slice per piece."""
    x, sizes = args[0], args[1]
    dim = int(args[2] if len(args) > 2 else kwargs.get("dim", 0))
    outs = meta["out"]
    refs, start = [], 0
    for i, (shape, dtype) in enumerate(outs):
        end = start + shape[dim]
        refs.append(w.add_node(f"{name}_{i}", "slice", [x], {"axis": dim, "start": start, "end": end, "step": 1},
                               shape, dtype))
        start = end
    return refs


def to_dtype(w, name, args, kwargs, meta):
    shape, dtype = _out(meta)
    if dtype == meta["in"][0][1]:
        return args[0]
    return w.add_node(name, "cast", [args[0]], {"dtype": dtype}, shape, dtype)


def topk(w, name, args, kwargs, meta):
    k = int(args[1])
    dim = int(args[2] if len(args) > 2 else kwargs.get("dim", -1))
    largest = args[3] if len(args) > 3 else kwargs.get("largest", True)
    if not largest:
        raise Unsupported("topk with largest=False")
    shape, dtype = _out(meta, 0)
    values = w.add_node(name, "topk", [args[0]], {"k": k, "axis": dim}, shape, dtype)
    return [values, None]


ATEN = {
    **{op: unary(ours) for op, ours in {
        "relu": "relu", "relu_": "relu", "sigmoid": "sigmoid", "tanh": "tanh", "exp": "exp", "log": "log",
        "neg": "neg", "abs": "abs", "sqrt": "sqrt", "rsqrt": "rsqrt", "sin": "sin", "cos": "cos", "erf": "erf",
        "reciprocal": "reciprocal", "silu": "silu", "silu_": "silu", "square": "square"}.items()},
    **{op: binary(ours) for op, ours in {
        "add": "add", "add_": "add", "sub": "sub", "mul": "mul", "mul_": "mul", "div": "div", "pow": "pow",
        "maximum": "maximum", "minimum": "minimum", "gt": "gt", "ge": "ge", "lt": "lt", "le": "le",
        "eq": "eq"}.items()},
    "gelu": gelu, "where": where, "masked_fill": masked_fill,
    "linear": linear, "matmul": matmul, "mm": matmul, "bmm": matmul, "addmm": addmm,
    "conv2d": conv2d, "convolution": convolution, "max_pool2d": max_pool2d,
    "batch_norm": batch_norm, "_native_batch_norm_legit_no_training": batch_norm,
    "layer_norm": layer_norm, "softmax": softmax, "_softmax": softmax,
    "sum": reduce("sum"), "mean": reduce("mean"), "amax": reduce("max"), "amin": reduce("min"),
    "adaptive_avg_pool2d": adaptive_avg_pool,
    "transpose": transpose, "permute": transpose, "t": transpose,
    "view": reshape, "reshape": reshape, "_unsafe_view": reshape, "flatten": reshape, "unsqueeze": reshape,
    "squeeze": reshape,
    "contiguous": identity, "clone": identity, "alias": identity, "detach": identity, "lift_fresh_copy": identity,
    "dropout": dropout, "cat": concat, "concat": concat, "slice": slice_op, "select": select,
    "split": split, "split_with_sizes": split, "to": to_dtype, "_to_copy": to_dtype, "type_as": to_dtype,
    "topk": topk,
}

# Ops that create a tensor from nothing: graph inputs with role "constant" (their values are not needed).
CREATION = {"full", "zeros", "ones", "arange", "scalar_tensor", "empty", "new_ones", "new_zeros", "new_full",
            "zeros_like", "ones_like", "full_like", "tril", "triu"}


def aten_name(target):
    """'aten.conv2d.default' -> 'conv2d'; anything else -> its str()."""
    text = str(target)
    parts = text.split(".")
    return parts[1] if len(parts) == 3 and parts[0] == "aten" else text


def fx_value(value, names):
    """Converts an FX argument: nodes become Refs (or the literal they stand for), lists recurse."""
    if hasattr(value, "op") and hasattr(value, "name") and hasattr(value, "meta"):
        return names.get(value.name)
    if isinstance(value, (list, tuple)):
        return [fx_value(v, names) for v in value]
    if type(value).__name__ in ("SymInt", "SymFloat"):
        return int(value) if type(value).__name__ == "SymInt" else float(value)
    if type(value).__name__ == "dtype":
        return TORCH_DTYPES.get(str(value), str(value))
    return value


def map_call(w, name, op, args, kwargs, meta):
    """Maps one ATen call; falls back to `custom` (one node per tensor output) when the mapping does not apply.
    Returns (result, reason): result is a Ref/number or a list of them; reason is None when mapped."""
    handler = ATEN.get(op)
    if handler is not None:
        mark = len(w.nodes)
        try:
            return handler(w, name, args, kwargs, meta), None
        except (Unsupported, TypeError, IndexError, KeyError, ValueError) as e:
            del w.nodes[mark:]
            reason = str(e) or type(e).__name__
    else:
        reason = None
    inputs = flatten_refs(args) + flatten_refs(list(kwargs.values()))
    if op in CREATION and not inputs and not isinstance(meta["out"], list):
        shape, dtype = meta["out"]
        if list(shape) == [] and op in ("full", "scalar_tensor") and _is_number(args[-1] if args else None):
            return args[-1], None  # a scalar: a number literal where it is used
        return w.add_input(name, shape, dtype, "constant"), None
    if isinstance(meta["out"], list):
        return [w.add_custom(f"{name}_{i}", op, inputs, s, d) if s is not None else None
                for i, (s, d) in enumerate(meta["out"])], reason or "no mapping"
    shape, dtype = meta["out"]
    return w.add_custom(name, op, inputs, shape, dtype), reason or "no mapping"


# ---- repair: turn nodes the C++ validator rejects into custom nodes (their shape is stated) ----

NODE_POINTER = re.compile(r"/nodes/(\d+)")


def rejected_nodes(diagnostics_text):
    return sorted({int(m.group(1)) for m in NODE_POINTER.finditer(diagnostics_text)})


def make_custom(node):
    refs = [i for i in node["inputs"] if isinstance(i, str)]
    return {"name": node["name"], "op": "custom", "inputs": refs, "attrs": {"label": f"{node['op']} (rejected)"},
            "shape": node["shape"], "dtype": node["dtype"]}


def _root_causes(graph, bad):
    """The rejected nodes none of whose producers is rejected: a wrong stated shape upstream makes its
    consumers disagree too, and those recover once the root is replaced."""
    index = {n["name"]: i for i, n in enumerate(graph["nodes"])}
    bad_set, memo = set(bad), {}

    def upstream_bad(i, seen):
        if i in memo:
            return memo[i]
        result = False
        for name in graph["nodes"][i]["inputs"]:
            j = index.get(name) if isinstance(name, str) else None
            if j is not None and j not in seen:
                seen.add(j)
                if j in bad_set or upstream_bad(j, seen):
                    result = True
                    break
        memo[i] = result
        return result
    return [i for i in bad if not upstream_bad(i, set())]


def repair(graph, validate, max_rounds=200):
    """Validates with `validate(graph) -> diagnostics text or ''`; replaces rejected nodes until it passes."""
    replaced = []
    for _ in range(max_rounds):
        text = validate(graph)
        if not text:
            return replaced
        bad = [i for i in rejected_nodes(text) if i < len(graph["nodes"]) and "shape" in graph["nodes"][i]
               and graph["nodes"][i]["op"] != "custom"]
        if not bad:
            raise RuntimeError("the graph does not validate and no node can be replaced:\n" + text)
        bad = _root_causes(graph, bad)
        for i in bad:
            replaced.append((graph["nodes"][i]["name"], graph["nodes"][i]["op"]))
            graph["nodes"][i] = make_custom(graph["nodes"][i])
    raise RuntimeError("gave up after %d rounds" % max_rounds)


def cli_validator(cli):
    import os
    import tempfile

    def validate(graph):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(graph, f)
        try:
            proc = subprocess.run([cli, "validate", f.name, "--quiet"], capture_output=True, text=True)
        finally:
            os.unlink(f.name)
        return "" if proc.returncode == 0 else proc.stderr or proc.stdout
    return validate


def summarize(graph, fallbacks):
    ops = {}
    for n in graph["nodes"]:
        key = n["op"] if n["op"] != "custom" else "custom:" + n["attrs"]["label"]
        ops[key] = ops.get(key, 0) + 1
    lines = [f"{len(graph['nodes'])} nodes: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items()))]
    for op, reason in sorted(set(fallbacks)):
        lines.append(f"  custom {op}: {reason}")
    return "\n".join(lines)


# ---- the torch part ----

def _meta_of(value):
    """(shape, dtype) of a FakeTensor, a list of those for tuples, None for non-tensors."""
    if isinstance(value, (list, tuple)):
        return [_meta_of(v) for v in value]
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return ([int(d) for d in value.shape], TORCH_DTYPES.get(str(value.dtype), "f32"))
    return None


def _input_roles(ep):
    from torch.export.graph_signature import InputKind
    roles = {}
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            roles[spec.arg.name] = ("activation", spec.arg.name)
        else:
            roles[spec.arg.name] = ("weight", spec.target or spec.arg.name)
    return roles


def export_program(ep, name, description):
    """Walks an ExportedProgram's graph and writes the format. Returns (graph dict, fallbacks)."""
    import operator
    w = GraphWriter(name, description)
    names, fallbacks = {}, []
    roles = _input_roles(ep)
    for node in ep.graph.nodes:
        meta = _meta_of(node.meta.get("val"))
        if node.op == "placeholder":
            role, label = roles.get(node.name, ("activation", node.name))
            if meta is None:
                continue
            names[node.name] = w.add_input(label, meta[0], meta[1], role)
        elif node.op == "call_function" and node.target is operator.getitem:
            base = names.get(node.args[0].name)
            names[node.name] = base[node.args[1]] if isinstance(base, list) else None
        elif node.op == "call_function":
            if meta is None:
                continue  # asserts and other ops without a tensor result
            args = [fx_value(a, names) for a in node.args]
            kwargs = {k: fx_value(v, names) for k, v in node.kwargs.items()}
            ins = [w.types.get(r.name, (None, None)) for r in flatten_refs(args)]
            op = aten_name(node.target)
            result, reason = map_call(w, node.name, op, args, kwargs, {"in": ins, "out": meta})
            if reason:
                fallbacks.append((op, reason))
            names[node.name] = result
        elif node.op == "output":
            for r in flatten_refs([fx_value(a, names) for a in node.args[0]]):
                if r.name not in w.outputs:
                    w.outputs.append(r.name)
    return w.to_json(), fallbacks


def resnet18(batch):
    import torch
    import torchvision
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(batch, 3, 224, 224)
    return model, (x,), "resnet18", f"torchvision ResNet-18, batch {batch}, 224x224, inference (torch.export)"


def gpt2_block(batch, seq=1024):
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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model", nargs="?", choices=["resnet18", "gpt2-block"])
    p.add_argument("-o", "--output")
    p.add_argument("--batch", type=int)
    p.add_argument("--cli", help="fusion-cli: validate, turning rejected nodes into custom")
    p.add_argument("--repair", metavar="GRAPH", help="only validate and repair an existing graph file (needs --cli)")
    args = p.parse_args(argv)
    if args.repair:
        if not args.cli:
            p.error("--repair needs --cli")
        graph = json.load(open(args.repair))
        replaced = repair(graph, cli_validator(args.cli))
        json.dump(graph, open(args.repair, "w"), indent=1)
        print(f"{args.repair}: replaced {len(replaced)} node(s) by custom: {replaced}")
        return 0
    if not args.model or not args.output:
        p.error("name a model and -o OUTPUT")
    import torch
    if args.model == "resnet18":
        module, example, name, desc = resnet18(args.batch or 32)
    else:
        module, example, name, desc = gpt2_block(args.batch or 8)
    with torch.no_grad():
        ep = torch.export.export(module, example)
    graph, fallbacks = export_program(ep, name, desc)
    if args.cli:
        for node_name, op in repair(graph, cli_validator(args.cli)):
            fallbacks.append((op, f"rejected by fusion-cli validate ({node_name})"))
    with open(args.output, "w") as f:
        json.dump(graph, f, indent=1)
        f.write("\n")
    print(f"{args.output}: " + summarize(graph, fallbacks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
