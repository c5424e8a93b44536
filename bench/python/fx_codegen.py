"""Turns a checked graph (fx_graph.Graph) into the source of a straight-line PyTorch function.

Straight-line source rather than an interpreter loop, for two reasons: eager timings of tiny graphs must not
include interpretation overhead, and every graph gets its own code object, so torch.compile (Dynamo) does not
pile up guards on one shared function. Pure Python (no torch import), so the generated text is unit-tested
without torch; fx_torch.py executes it.

Two modes:
- "native": the graph's dtypes; dropout is PyTorch's own training-mode dropout (a different random mask
  from our Philox kernels, which is fine for timing, not for comparing values).
- "reference": every floating tensor is float64 (inputs are upcast by the caller); casts still round to their
  target dtype, so the reference rounds where the graph says to; dropout follows the function's
  `dropout_hypothesis` argument: "keep" (x / (1-p) everywhere) or "drop" (0 everywhere). crosscheck.py uses
  the two to check our dropout element by element (see there).
"""
import keyword
import re

from fx_graph import BINARY, COMPARE, UNARY

TORCH_DTYPES = {"f32": "torch.float32", "f16": "torch.float16", "bf16": "torch.bfloat16",
                "i32": "torch.int32", "i64": "torch.int64", "bool": "torch.bool"}

UNARY_EXPR = {
    "neg": "torch.neg({0})", "abs": "torch.abs({0})", "relu": "torch.relu({0})", "gelu": "F.gelu({0})",
    "gelu_tanh": "F.gelu({0}, approximate='tanh')", "silu": "F.silu({0})", "sigmoid": "torch.sigmoid({0})",
    "tanh": "torch.tanh({0})", "exp": "torch.exp({0})", "log": "torch.log({0})", "sqrt": "torch.sqrt({0})",
    "rsqrt": "torch.rsqrt({0})", "sin": "torch.sin({0})", "cos": "torch.cos({0})", "erf": "torch.erf({0})",
    "reciprocal": "torch.reciprocal({0})", "square": "torch.square({0})"}
OPERATOR = {"add": "+", "sub": "-", "mul": "*", "div": "/", "gt": ">", "ge": ">=", "lt": "<", "le": "<=",
            "eq": "=="}


class UnsupportedOp(ValueError):
    """The graph holds an op PyTorch cannot stand in for (custom)."""


def identifiers(graph):
    """A valid, unique Python identifier for every tensor name (names in files are free text)."""
    out, used = {}, set()
    for name in [i.name for i in graph.inputs] + [n.name for n in graph.nodes]:
        base = re.sub(r"\W", "_", name)
        if not base or base[0].isdigit() or keyword.iskeyword(base) or base in ("torch", "F", "fx", "inputs"):
            base = "t_" + base
        ident, k = base, 1
        while ident in used:
            k += 1
            ident = f"{base}_{k}"
        used.add(ident)
        out[name] = ident
    return out


def _arg(value, ids):
    return ids[value] if isinstance(value, str) else repr(float(value))


def _elementwise(node, args, mode):
    op, a = node.op, node.attrs
    if op in UNARY:
        return UNARY_EXPR[op].format(*args)
    if op in OPERATOR:
        return f"({args[0]} {OPERATOR[op]} {args[1]})"
    if op == "pow":
        return f"torch.pow({args[0]}, {args[1]})"
    if op in ("maximum", "minimum"):
        scalars = [not isinstance(i, str) for i in node.inputs]
        if any(scalars):  # torch.maximum takes tensors only; clamp is the same op with a number
            t, s = (args[1], args[0]) if scalars[0] else (args[0], args[1])
            return f"torch.clamp({t}, {'min' if op == 'maximum' else 'max'}={s})"
        return f"torch.{op}({args[0]}, {args[1]})"
    if op == "where":
        return f"torch.where({args[0]}, {args[1]}, {args[2]})"
    if op == "cast":
        if mode == "reference":
            return f"fx.cast_reference({args[0]}, {TORCH_DTYPES[a['dtype']]})"
        return f"{args[0]}.to({TORCH_DTYPES[a['dtype']]})"
    if op == "dropout":
        p = float(a.get("p", 0.5))
        if mode == "reference":
            return f"fx.dropout_reference({args[0]}, {p!r}, dropout_hypothesis)"
        return f"F.dropout({args[0]}, p={p!r}, training=True)"
    raise AssertionError(op)


def _reduction(node, args, rank):
    op, a = node.op, node.attrs
    if op == "softmax":
        return f"torch.softmax({args[0]}, dim={int(a.get('axis', -1))})"
    if op == "layernorm":
        axis = int(a.get("axis", -1)) % rank
        return (f"F.layer_norm({args[0]}, {tuple(node.type.shape[axis:])!r}, weight={args[1]}, "
                f"bias={args[2]}, eps={float(a.get('eps', 1e-5))!r})")
    if op == "rmsnorm":
        return f"F.rms_norm({args[0]}, ({node.type.shape[-1]},), weight={args[1]}, eps={float(a.get('eps', 1e-6))!r})"
    if op == "batchnorm":
        axis, eps = int(a.get("axis", 1)) % rank, float(a.get("eps", 1e-5))
        if axis == 1:
            return f"F.batch_norm({', '.join(args)}, training=False, eps={eps!r})"
        return f"fx.batchnorm_on_axis({', '.join(args)}, axis={axis}, eps={eps!r})"
    axis = a.get("axis", -1)
    dims = tuple(axis) if isinstance(axis, list) else (int(axis),)
    fn = {"sum": "torch.sum", "mean": "torch.mean", "max": "torch.amax", "min": "torch.amin"}[op]
    return f"{fn}({args[0]}, dim={dims!r}, keepdim={bool(a.get('keepdim', False))})"


def _structural(node, args, rank):
    op, a = node.op, node.attrs
    if op == "matmul":
        lhs = f"{args[0]}.mT" if a.get("transpose_a") else args[0]
        rhs = f"{args[1]}.mT" if a.get("transpose_b") else args[1]
        return f"torch.matmul({lhs}, {rhs})"
    if op == "conv2d":
        bias = args[2] if len(args) == 3 else "None"
        opts = ", ".join(f"{k}={a.get(k, d)!r}" for k, d in (("stride", 1), ("padding", 0), ("dilation", 1),
                                                               ("groups", 1)))
        return f"F.conv2d({args[0]}, {args[1]}, {bias}, {opts})"
    if op == "max_pool2d":
        opts = ", ".join(f"{k}={a.get(k, d)!r}" for k, d in (("kernel_size", None), ("stride", 1), ("padding", 0),
                                                               ("dilation", 1)))
        return f"F.max_pool2d({args[0]}, {opts})"
    if op == "transpose":
        return f"{args[0]}.permute({tuple(a.get('perm', list(range(rank))[::-1]))!r})"
    if op == "reshape":
        return f"{args[0]}.reshape({node.type.shape!r})"
    if op == "concat":
        return f"torch.cat([{', '.join(args)}], dim={int(a.get('axis', 0))})"
    if op == "slice":
        axis = int(a.get("axis", 0)) % rank
        end = "" if a.get("end") is None else int(a["end"])
        return f"{args[0]}[{':, ' * axis}{int(a.get('start', 0))}:{end}:{int(a.get('step', 1))}]"
    if op == "sort":
        return (f"torch.sort({args[0]}, dim={int(a.get('axis', -1))}, "
                f"descending={bool(a.get('descending', False))}).values")
    if op == "topk":
        return f"torch.topk({args[0]}, {int(a['k'])}, dim={int(a.get('axis', -1))}).values"
    raise UnsupportedOp(f"node {node.name}: op {op!r} (custom {a.get('label', '')!r}) has no PyTorch "
                        "equivalent; this graph cannot be run or cross-checked by the harness")


def node_expression(node, graph, ids, mode="native"):
    args = [_arg(i, ids) for i in node.inputs]
    first = node.inputs[0] if node.inputs else None
    rank = len(graph.types[first].shape) if isinstance(first, str) else 0
    if node.op in UNARY + BINARY + COMPARE + ("where", "cast", "dropout"):
        return _elementwise(node, args, mode)
    if node.op in ("sum", "mean", "max", "min", "softmax", "layernorm", "rmsnorm", "batchnorm"):
        return _reduction(node, args, rank)
    return _structural(node, args, rank)


def function_source(graph, mode="native", fn_name="graph_fn"):
    """Source of `def graph_fn(inputs, dropout_hypothesis="keep") -> dict of outputs`."""
    if mode not in ("native", "reference"):
        raise ValueError(f"mode {mode!r}")
    ids = identifiers(graph)
    lines = [f"def {fn_name}(inputs, dropout_hypothesis='keep'):",
             f"    # {graph.name} ({mode})"]
    lines += [f"    {ids[i.name]} = inputs[{i.name!r}]" for i in graph.inputs]
    lines += [f"    {ids[n.name]} = {node_expression(n, graph, ids, mode)}" for n in graph.nodes]
    # Every output of the format is a row-major (contiguous) tensor. PyTorch may hand back a permuted view
    # instead: eager's elementwise ops keep their input's strides and Inductor writes in the same order, so
    # relu(x.t() + 1) would never be transposed at all. .contiguous() asks both for the same bytes our plans
    # write; on an output that is already contiguous it is a no-op (no kernel).
    outs = ", ".join(f"{o!r}: {ids[o]}.contiguous()" for o in graph.outputs)
    lines.append(f"    return {{{outs}}}")
    return "\n".join(lines) + "\n"


def positive_inputs(graph):
    """Graph inputs that must be positive to stay in an op's domain (log, sqrt, a divisor, a variance), so
    that random inputs produce no NaN or huge values that would make the comparison meaningless."""
    slots = {"log": (0,), "sqrt": (0,), "rsqrt": (0,), "reciprocal": (0,), "pow": (0,), "div": (1,),
             "batchnorm": (2,)}
    names = set()
    for n in graph.nodes:
        for k in slots.get(n.op, ()):
            if k < len(n.inputs) and isinstance(n.inputs[k], str):
                names.add(n.inputs[k])
    return names
