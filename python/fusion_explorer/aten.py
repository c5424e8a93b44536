"""ATen ops -> the graph format's ops: one handler per ATen op (or family), in plain Python so the tables are
tested without torch. An op without a handler, or a use of one the handler cannot express, becomes a `custom`
node labelled with the ATen name and carrying the shape PyTorch computed (as the ONNX importer does), so the
graph still opens and shows where fusion stops; export.py reports each such fallback as a warning.
"""
import math

from .graph_format import Ref

TORCH_DTYPES = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16", "torch.int32": "i32",
                "torch.int64": "i64", "torch.bool": "bool", "torch.float64": "f32", "torch.int8": "i32",
                "torch.uint8": "i32", "torch.int16": "i32"}
INT64_MAX = 2**63 - 1


class Unsupported(Exception):
    """The op (or this use of it) has no mapping: the node becomes `custom`."""


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


# torch's default eps for rms_norm(eps=None): the dtype's machine epsilon (torch.finfo(dtype).eps).
FINFO_EPS = {"f32": 1.1920928955078125e-07, "f16": 0.0009765625, "bf16": 0.0078125}


def rms_norm(w, name, args, kwargs, meta):
    """aten.rms_norm(x, normalized_shape, weight=None, eps=None): the format's rmsnorm is over the last axis."""
    x, normalized = args[0], list(args[1])
    weight = args[2] if len(args) > 2 else kwargs.get("weight")
    eps = args[3] if len(args) > 3 else kwargs.get("eps")
    if len(normalized) != 1:
        raise Unsupported("rms_norm over more than the last axis")
    if not isinstance(weight, Ref):
        raise Unsupported("rms_norm without a weight")
    shape, dtype = _out(meta)
    eps = FINFO_EPS.get(meta["in"][0][1], FINFO_EPS["f32"]) if eps is None else float(eps)
    return w.add_node(name, "rmsnorm", [x, weight], {"eps": eps}, shape, dtype)


def sort(w, name, args, kwargs, meta):
    """aten.sort(x, dim=-1, descending=False) -> (values, indices); the format sorts values only."""
    dim = int(args[1] if len(args) > 1 else kwargs.get("dim", -1))
    descending = bool(args[2] if len(args) > 2 else kwargs.get("descending", False))
    shape, dtype = _out(meta, 0)
    return [w.add_node(name, "sort", [args[0]], {"axis": dim, "descending": descending}, shape, dtype), None]


def max_pool2d_with_indices(w, name, args, kwargs, meta):
    """The decomposed form of max_pool2d: (values, indices); the indices are not used by inference graphs."""
    single = dict(meta, out=_out(meta, 0))
    return [max_pool2d(w, name, args, kwargs, single), None]


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
    "topk": topk, "sort": sort, "rms_norm": rms_norm, "max_pool2d_with_indices": max_pool2d_with_indices,
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
            w.drop_nodes_after(mark)
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
