"""The graph format, version 1, in plain Python: parsing, checking, shape and dtype inference, and the
minimum-traffic byte count the benchmark divides by. No torch or numpy here, so the parsing can be unit-tested
on a machine without them (bench/python/test_graph_parse.py); fx_torch.py builds PyTorch code on top of it.

The semantics follow the format's documentation; the C++ loader (core/graph) is the authority, and this
module's job is only to agree with it on the sample graphs and to explain a bad file in one line.
"""
import json
import math

FORMAT = "fusion-explorer/graph"
VERSION = 1

DTYPE_SIZES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "bool": 1}
FLOAT_DTYPES = ("f32", "f16", "bf16")
ROLES = ("activation", "weight", "constant")

UNARY = ("neg", "abs", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt",
         "sin", "cos", "erf", "reciprocal", "square")
BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "pow")
COMPARE = ("gt", "ge", "lt", "le", "eq")
REDUCE = ("sum", "mean", "max", "min")
CONTRACTION = ("matmul", "conv2d")
OPAQUE = ("sort", "topk", "max_pool2d", "custom")
ALL_OPS = set(UNARY + BINARY + COMPARE + REDUCE + CONTRACTION + OPAQUE) | {
    "where", "cast", "dropout", "batchnorm", "softmax", "layernorm", "rmsnorm",
    "transpose", "reshape", "concat", "slice"}


class GraphError(ValueError):
    """A bad graph file: the message names the node (or input) and what is wrong."""


class TensorType:
    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype

    @property
    def numel(self):
        return math.prod(self.shape)

    @property
    def nbytes(self):
        return self.numel * DTYPE_SIZES[self.dtype]

    def __eq__(self, other):
        return isinstance(other, TensorType) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __repr__(self):
        return f"{self.dtype}{list(self.shape)}"


class Input:
    def __init__(self, name, ttype, role):
        self.name, self.type, self.role = name, ttype, role


class Node:
    def __init__(self, name, op, inputs, attrs, ttype):
        self.name, self.op, self.inputs, self.attrs, self.type = name, op, inputs, attrs, ttype

    def tensor_inputs(self):
        return [i for i in self.inputs if isinstance(i, str)]


def _fail(where, message):
    raise GraphError(f"{where}: {message}")


def broadcast_shapes(where, *shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            _fail(where, f"shapes {[list(s) for s in shapes]} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def norm_axis(where, axis, rank):
    if not -rank <= axis < max(rank, 1):
        _fail(where, f"axis {axis} out of range for rank {rank}")
    return axis % rank if rank else 0


def reduce_axes(where, attrs, rank):
    axis = attrs.get("axis", -1)
    axes = axis if isinstance(axis, list) else [axis]
    return sorted({norm_axis(where, int(a), rank) for a in axes})


def pair(value, default):
    """An int or [h, w] attribute as (h, w); one value in a list serves both, as in core/graph."""
    if value is None:
        value = default
    if isinstance(value, int):
        return value, value
    value = tuple(value)
    return (value[0], value[0]) if len(value) == 1 else value


# --- inference per op kind: each takes (where, operand types (TensorType or float), attrs) ---

def _elementwise(where, op, ins, attrs):
    tensors = [t for t in ins if isinstance(t, TensorType)]
    if not tensors:
        _fail(where, "needs at least one tensor operand")
    if op == "where":
        cond, vals = ins[0], [t for t in ins[1:] if isinstance(t, TensorType)]
        if not isinstance(cond, TensorType) or cond.dtype != "bool":
            _fail(where, "where's condition must be a bool tensor")
        dtype = vals[0].dtype if vals else "f32"
        others = vals
    else:
        dtype = tensors[0].dtype
        others = tensors
    if len({t.dtype for t in others}) > 1:
        _fail(where, f"operand dtypes differ: {[t.dtype for t in others]}")
    shape = broadcast_shapes(where, *[t.shape for t in tensors])
    if op in COMPARE:
        dtype = "bool"
    elif op == "cast":
        dtype = attrs.get("dtype")
        if dtype not in DTYPE_SIZES:
            _fail(where, f"cast needs attrs.dtype, one of {list(DTYPE_SIZES)}")
    elif op == "dropout" and not 0.0 <= float(attrs.get("p", 0.5)) < 1.0:
        _fail(where, "dropout p must be in [0, 1)")
    return TensorType(shape, dtype)


def _batchnorm(where, ins, attrs):
    x = ins[0]
    axis = norm_axis(where, int(attrs.get("axis", 1)), len(x.shape))
    for i, p in enumerate(ins[1:], start=1):
        if not isinstance(p, TensorType) or p.shape != (x.shape[axis],):
            _fail(where, f"input {i} must have shape [{x.shape[axis]}] (channels on axis {axis})")
    return TensorType(x.shape, x.dtype)


def _reduce(where, op, ins, attrs):
    x = ins[0]
    if op == "softmax":
        norm_axis(where, int(attrs.get("axis", -1)), len(x.shape))
        return TensorType(x.shape, x.dtype)
    if op in ("layernorm", "rmsnorm"):
        axis = norm_axis(where, int(attrs.get("axis", -1)), len(x.shape)) if op == "layernorm" else len(x.shape) - 1
        for i, p in enumerate(ins[1:], start=1):
            if not isinstance(p, TensorType) or p.shape != x.shape[axis:]:
                _fail(where, f"input {i} must have shape {list(x.shape[axis:])}")
        return TensorType(x.shape, x.dtype)
    axes = reduce_axes(where, attrs, len(x.shape))
    keep = bool(attrs.get("keepdim", False))
    shape = [1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes]
    return TensorType(shape, x.dtype)


def _matmul(where, ins, attrs):
    a, b = ins
    if len(a.shape) < 2 or len(b.shape) < 2:
        _fail(where, "matmul needs operands of rank 2 or more (1-D is not allowed)")
    if a.dtype != b.dtype:
        _fail(where, f"operand dtypes differ: {a.dtype}, {b.dtype}")
    m, ka = a.shape[-2:][::-1] if attrs.get("transpose_a") else a.shape[-2:]
    kb, n = b.shape[-2:][::-1] if attrs.get("transpose_b") else b.shape[-2:]
    if ka != kb:
        _fail(where, f"inner dimensions differ: {list(a.shape)} x {list(b.shape)}")
    batch = broadcast_shapes(where, a.shape[:-2], b.shape[:-2])
    return TensorType(batch + (m, n), a.dtype)


def _conv2d(where, ins, attrs):
    x, w = ins[0], ins[1]
    if len(x.shape) != 4 or len(w.shape) != 4:
        _fail(where, "conv2d needs x NCHW and w OIHW (rank 4)")
    groups = int(attrs.get("groups", 1))
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape
    if c != i * groups or o % groups:
        _fail(where, f"channels: x has {c}, w expects {i} x {groups} groups")
    if len(ins) == 3 and ins[2].shape != (o,):
        _fail(where, f"bias must have shape [{o}]")
    oh, ow = _window_out(where, h, wd, kh, kw, attrs)
    return TensorType((n, o, oh, ow), x.dtype)


def _window_out(where, h, w, kh, kw, attrs):
    """Output height and width of a 2-D window (conv2d, max_pool2d), as core/graph's window_out."""
    (sh, sw), (ph, pw), (dh, dw) = (pair(attrs.get(k), d) for k, d in
                                    (("stride", 1), ("padding", 0), ("dilation", 1)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        _fail(where, "output would be empty")
    return oh, ow


def _max_pool2d(where, ins, attrs):
    x = ins[0]
    if len(x.shape) != 4:
        _fail(where, "max_pool2d needs x NCHW (rank 4)")
    if x.dtype not in ("f32", "f16", "bf16"):
        _fail(where, f"max_pool2d takes f32, f16 or bf16, not {x.dtype}")
    if "kernel_size" not in attrs:
        _fail(where, "max_pool2d needs attrs.kernel_size")
    n, c, h, wd = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (pair(attrs.get(k), d) for k, d in
                                              (("kernel_size", 1), ("stride", 1), ("padding", 0), ("dilation", 1)))
    if min(kh, kw, sh, sw, dh, dw) < 1 or min(ph, pw) < 0:
        _fail(where, "kernel_size, stride and dilation must be positive, padding not negative")
    if 2 * ph > dh * (kh - 1) + 1 or 2 * pw > dw * (kw - 1) + 1:
        _fail(where, "padding is more than half the window's extent")
    oh, ow = _window_out(where, h, wd, kh, kw, attrs)
    return TensorType((n, c, oh, ow), x.dtype)


def _layout(where, op, ins, attrs):
    x = ins[0]
    rank = len(x.shape)
    if op == "transpose":
        perm = attrs.get("perm", list(range(rank))[::-1])
        if sorted(perm) != list(range(rank)):
            _fail(where, f"perm {perm} is not a permutation of {rank} axes")
        return TensorType([x.shape[p] for p in perm], x.dtype)
    if op == "reshape":
        shape = list(attrs.get("shape", []))
        if shape.count(-1) > 1:
            _fail(where, "reshape allows one -1")
        known = math.prod(d for d in shape if d != -1)
        if -1 in shape:
            if known == 0 or x.numel % known:
                _fail(where, f"cannot reshape {list(x.shape)} to {shape}")
            shape[shape.index(-1)] = x.numel // known
        if math.prod(shape) != x.numel:
            _fail(where, f"cannot reshape {list(x.shape)} to {shape}")
        return TensorType(shape, x.dtype)
    if op == "concat":
        axis = norm_axis(where, int(attrs.get("axis", 0)), rank)
        for t in ins[1:]:
            if t.dtype != x.dtype or len(t.shape) != rank or any(
                    t.shape[i] != x.shape[i] for i in range(rank) if i != axis):
                _fail(where, "concat operands differ outside the concat axis")
        shape = list(x.shape)
        shape[axis] = sum(t.shape[axis] for t in ins)
        return TensorType(shape, x.dtype)
    # slice
    axis = norm_axis(where, int(attrs.get("axis", 0)), rank)
    length = len(range(*slice(attrs.get("start", 0), attrs.get("end"), attrs.get("step", 1)).indices(
        x.shape[axis])))
    if int(attrs.get("step", 1)) <= 0 or length == 0:
        _fail(where, "slice must have a positive step and select at least one element")
    shape = list(x.shape)
    shape[axis] = length
    return TensorType(shape, x.dtype)


def _opaque(where, op, ins, attrs, declared):
    x = ins[0]
    if op == "custom":
        if declared is None:
            _fail(where, "custom nodes must state \"shape\" and \"dtype\"")
        return declared
    axis = norm_axis(where, int(attrs.get("axis", -1)), len(x.shape))
    if op == "sort":
        return TensorType(x.shape, x.dtype)
    k = int(attrs.get("k", 0))
    if not 0 < k <= x.shape[axis]:
        _fail(where, f"topk k={k} out of range for a dimension of {x.shape[axis]}")
    shape = list(x.shape)
    shape[axis] = k
    return TensorType(shape, x.dtype)


ARITY = {**{op: (1, 1) for op in UNARY + REDUCE + ("cast", "dropout", "softmax", "transpose", "reshape",
                                                    "slice", "sort", "topk", "max_pool2d")},
         **{op: (2, 2) for op in BINARY + COMPARE + ("matmul",)},
         "where": (3, 3), "batchnorm": (5, 5), "layernorm": (3, 3), "rmsnorm": (2, 2), "conv2d": (2, 3),
         "concat": (2, None), "custom": (0, None)}
SCALAR_OK = set(BINARY + COMPARE + ("where",))


def infer(where, op, ins, attrs, declared=None):
    """The output type of one node, or GraphError."""
    lo, hi = ARITY[op]
    if len(ins) < lo or (hi is not None and len(ins) > hi):
        _fail(where, f"{op} takes {lo}{'' if hi == lo else '+' if hi is None else f'..{hi}'} inputs, got {len(ins)}")
    if op not in SCALAR_OK and any(not isinstance(t, TensorType) for t in ins):
        _fail(where, f"{op} does not take number literals")
    if op in UNARY + BINARY + COMPARE + ("where", "cast", "dropout"):
        return _elementwise(where, op, ins, attrs)
    if op == "batchnorm":
        return _batchnorm(where, ins, attrs)
    if op in REDUCE + ("softmax", "layernorm", "rmsnorm"):
        return _reduce(where, op, ins, attrs)
    if op == "matmul":
        return _matmul(where, ins, attrs)
    if op == "conv2d":
        return _conv2d(where, ins, attrs)
    if op == "max_pool2d":
        return _max_pool2d(where, ins, attrs)
    if op in ("transpose", "reshape", "concat", "slice"):
        return _layout(where, op, ins, attrs)
    return _opaque(where, op, ins, attrs, declared)


class Graph:
    """A checked graph: inputs, nodes in topological order, output names, and a type for every tensor."""

    def __init__(self, name, description, inputs, nodes, outputs):
        self.name, self.description = name, description
        self.inputs, self.nodes, self.outputs = inputs, nodes, outputs
        self.types = {i.name: i.type for i in inputs}
        self.types.update({n.name: n.type for n in nodes})

    @staticmethod
    def load(path):
        with open(path, encoding="utf-8") as f:
            try:
                doc = json.load(f)
            except json.JSONDecodeError as e:
                raise GraphError(f"{path}: not JSON: {e}") from None
        return Graph.from_dict(doc)

    @staticmethod
    def from_dict(doc):
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise GraphError(f'"format" must be "{FORMAT}"')
        if doc.get("version") != VERSION:
            raise GraphError(f"unsupported version {doc.get('version')!r} (this reader knows {VERSION})")
        inputs = [_parse_input(i, d) for i, d in enumerate(doc.get("inputs", []))]
        types = {}
        for i in inputs:
            if i.name in types:
                _fail(f"input {i.name}", "duplicate name")
            types[i.name] = i.type
        nodes = [_parse_node(n, types) for n in _topological(doc.get("nodes", []), set(types))]
        outputs = doc.get("outputs", [])
        if not outputs:
            raise GraphError("the graph has no outputs")
        for o in outputs:
            if o not in types:
                _fail(f"output {o!r}", "names no input or node")
        return Graph(doc.get("name", ""), doc.get("description", ""), inputs, nodes, list(outputs))

    def min_bytes(self):
        """Compulsory traffic: every graph input read once plus every output written once (the floor any
        schedule must pay; the benchmark's bandwidth fraction divides by it)."""
        return sum(i.type.nbytes for i in self.inputs) + sum(self.types[o].nbytes for o in dict.fromkeys(self.outputs))

    def has_contraction(self):
        return any(n.op in CONTRACTION for n in self.nodes)

    def op_counts(self):
        counts = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return counts


def _parse_input(index, d):
    where = f"inputs[{index}] {d.get('name', '?')!r}" if isinstance(d, dict) else f"inputs[{index}]"
    if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not d["name"]:
        _fail(where, "needs a non-empty string \"name\"")
    shape = d.get("shape")
    if not isinstance(shape, list) or any(not isinstance(s, int) or s <= 0 for s in shape):
        _fail(where, "\"shape\" must be a list of positive integers")
    if d.get("dtype") not in DTYPE_SIZES:
        _fail(where, f"\"dtype\" must be one of {list(DTYPE_SIZES)}")
    role = d.get("role", "activation")
    if role not in ROLES:
        _fail(where, f"\"role\" must be one of {list(ROLES)}")
    return Input(d["name"], TensorType(shape, d["dtype"]), role)


def _topological(nodes, known):
    """Nodes may come in any order in the file; returns them producers-first, stable in file order."""
    names = {}
    for n in nodes:
        if not isinstance(n, dict) or not isinstance(n.get("name"), str):
            raise GraphError(f"node {n!r}: needs a string \"name\"")
        if n["name"] in names or n["name"] in known:
            _fail(f"node {n['name']}", "duplicate name")
        names[n["name"]] = n
    done, order, pending = set(known), [], list(nodes)
    while pending:  # one pass per level; a file already in topological order comes out unchanged
        left = []
        for n in pending:
            if all(not isinstance(i, str) or i in done for i in n.get("inputs", [])):
                done.add(n["name"])
                order.append(n)
            else:
                left.append(n)
        if len(left) == len(pending):
            n = left[0]
            missing = [i for i in n.get("inputs", []) if isinstance(i, str) and i not in done]
            unknown = [i for i in missing if i not in names]
            _fail(f"node {n['name']}", f"unknown input {unknown[0]!r}" if unknown else "is part of a cycle")
        pending = left
    return order


def _parse_node(d, types):
    where = f"node {d['name']}"
    op = d.get("op")
    if op not in ALL_OPS:
        _fail(where, f"unknown op {op!r}")
    attrs = d.get("attrs", {})
    if not isinstance(attrs, dict):
        _fail(where, "\"attrs\" must be an object")
    raw = d.get("inputs", [])
    for i in raw:
        if isinstance(i, bool) or not isinstance(i, (str, int, float)):
            _fail(where, f"input {i!r} is neither a tensor name nor a number")
    ins = [types[i] if isinstance(i, str) else float(i) for i in raw]
    declared = None
    if "shape" in d or "dtype" in d:
        if "shape" not in d or "dtype" not in d or d["dtype"] not in DTYPE_SIZES:
            _fail(where, "a stated type needs both \"shape\" and a valid \"dtype\"")
        declared = TensorType(d["shape"], d["dtype"])
    ttype = infer(where, op, ins, attrs, declared)
    if declared is not None and declared != ttype:
        _fail(where, f"states {declared} but its inputs give {ttype}")
    types[d["name"]] = ttype
    return Node(d["name"], op, list(raw), attrs, ttype)


# --- rules for comparing our results with PyTorch (used by crosscheck.py, unit-tested without torch) ---

TOLERANCE_F32 = 1e-5        # f32 elementwise and reductions: a few ulps after summation
TOLERANCE_TF32 = 2e-3       # f32 matmul/conv on tensor cores (TF32 keeps a 10-bit mantissa)
TOLERANCE_HALF = 1e-2       # f16/bf16 anywhere on the path (bf16 keeps 8 bits)

PER_ELEMENT_OPS = set(UNARY + BINARY + COMPARE) | {"where", "cast", "dropout", "transpose", "reshape", "slice"}


def ancestors(graph, name):
    """Every tensor `name` depends on, itself included."""
    producers = {n.name: n for n in graph.nodes}
    seen, stack = set(), [name]
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        if t in producers:
            stack.extend(producers[t].tensor_inputs())
    return seen


def half_attention_upstream(graph, cone):
    """Whether a half-precision attention chain (a softmax between two matmuls) lies in `cone`: its unfused form,
    like PyTorch eager, rounds the score matrix to the half type, about 1% off the float64 reference at GPT-2's
    shapes (the executor's attention_output_tolerances doubles the tolerance there too)."""
    for n in graph.nodes:
        if n.op != "softmax" or n.name not in cone or graph.types[n.name].dtype not in ("f16", "bf16"):
            continue
        before = ancestors(graph, n.name)
        fed_by_matmul = any(m.op == "matmul" and m.name in before for m in graph.nodes)
        feeds_matmul = any(m.op == "matmul" and m.name in cone and n.name in ancestors(graph, m.name)
                           for m in graph.nodes)
        if fed_by_matmul and feeds_matmul:
            return True
    return False


def tolerance(graph, output):
    """Relative-error threshold for one output, set by the least precise thing on its path: a half-precision
    attention chain upstream (twice the half tolerance), a half-precision tensor anywhere upstream, else an f32
    contraction (TF32), else plain f32."""
    cone = ancestors(graph, output)
    if half_attention_upstream(graph, cone):
        return 2 * TOLERANCE_HALF
    if any(graph.types[t].dtype in ("f16", "bf16") for t in cone):
        return TOLERANCE_HALF
    if any(n.op in CONTRACTION and n.name in cone for n in graph.nodes):
        return TOLERANCE_TF32
    return TOLERANCE_F32


def dropout_plan(graph, output):
    """How to check one output against PyTorch, given that our dropout mask (Philox) differs from PyTorch's:
    "exact" when no dropout is upstream; "per_element" when exactly one dropout is upstream and everything
    after it maps elements one to one (so each output element saw one mask bit: it must equal either the
    "kept" or the "dropped" reference); "unsupported" otherwise, with the reason."""
    cone = ancestors(graph, output)
    drops = [n for n in graph.nodes if n.op == "dropout" and n.name in cone]
    if not drops:
        return "exact", ""
    if len(drops) > 1:
        return "unsupported", f"{len(drops)} dropout nodes feed {output}; only one can be checked per element"
    downstream = [n for n in graph.nodes if n.name in cone and drops[0].name in ancestors(graph, n.name)
                  and n.name != drops[0].name]
    mixing = [n.name for n in downstream if n.op not in PER_ELEMENT_OPS]
    if mixing:
        return "unsupported", f"{mixing[0]} mixes dropout elements before {output}"
    return "per_element", ""


GROUPS = ("all", "elementwise", "contraction")


def samples_in_group(paths, group):
    """The graph files of one group: "elementwise" those without a matmul or conv2d (the elementwise and
    reduction samples, whose target is a fraction of copy bandwidth), "contraction" those with one, "all" every
    file. All the samples take longer than one 10-minute call on the GPU machine, so a full benchmark is one call
    per group, merged afterwards (bench_report.py merge); the groups partition the samples, so none is left out."""
    if group not in GROUPS:
        raise ValueError(f"unknown group {group!r}; one of {', '.join(GROUPS)}")
    if group == "all":
        return list(paths)
    want = group == "contraction"
    return [p for p in paths if Graph.load(p).has_contraction() == want]
