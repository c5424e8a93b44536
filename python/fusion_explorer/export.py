"""Exports a PyTorch module, or a program saved with torch.export.save, to Fusion Explorer's graph format.

    python -m fusion_explorer.export mypkg.models:make_model --input x=f32[8,1024,768] -o model.json
    python -m fusion_explorer.export model.pt2 -o model.json
    python -m fusion_explorer.export fusion_explorer.models:resnet18 -o resnet18.json --cli build/app/cli/fusion-cli
    python -m fusion_explorer.export --repair graph.json --cli build/app/cli/fusion-cli

`module:function` names a factory: called with no arguments it returns an nn.Module (inputs from --input), or
(module, example inputs[, name, description]). torch.export captures it as ATen ops, which aten.py maps to the
format's ops; unmapped ops become `custom` nodes with a warning. Each node keeps the file:line of the user code
that produced it ("source"), which the GUI shows. With --cli, nodes the C++ loader rejects become `custom` too.
"""
import argparse
import importlib
import os
import re
import sys

from . import aten, repair
from .graph_format import GraphWriter, write_json

DTYPE_NAMES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32", "i64": "int64",
               "bool": "bool"}
INPUT_SPEC = re.compile(r"^([A-Za-z_][\w.]*)=(f32|f16|bf16|i32|i64|bool)\[([\d,\s]*)\]$")
FRAME = re.compile(r'File "([^"]+)", line (\d+)')


class ExportError(Exception):
    """Bad arguments or a model that cannot be loaded: the message says what to change."""


def parse_input_spec(text):
    """'x=f32[8,1024,768]' -> ('x', 'f32', [8, 1024, 768])."""
    m = INPUT_SPEC.match(text.strip())
    if not m:
        raise ExportError(f"--input {text!r}: expected NAME=DTYPE[d0,d1,...] with DTYPE one of "
                          f"{', '.join(DTYPE_NAMES)}, e.g. x=f32[8,1024,768]")
    dims = [int(d) for d in m.group(3).split(",") if d.strip()]
    return m.group(1), m.group(2), dims


def short_path(path):
    """A file path as users read it: below site-/dist-packages, or relative to the working directory."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def source_location(stack_trace, skip_dirs=()):
    """'file:line' of the innermost frame of an FX node's stack trace that is not inside `skip_dirs` (torch's
    own files), i.e. the line of the user's module that called the op; None when the trace has no frame."""
    frames = FRAME.findall(stack_trace or "")
    if not frames:
        return None
    chosen = frames[-1]
    for path, line in reversed(frames):
        if not any(os.path.abspath(path).startswith(d) for d in skip_dirs):
            chosen = (path, line)
            break
    return f"{short_path(chosen[0])}:{chosen[1]}"


def summarize(graph, fallbacks):
    ops = {}
    for n in graph["nodes"]:
        key = n["op"] if n["op"] != "custom" else "custom:" + n["attrs"]["label"]
        ops[key] = ops.get(key, 0) + 1
    lines = [f"{len(graph['nodes'])} nodes: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items()))]
    for op, reason in sorted(set(fallbacks)):
        lines.append(f"  warning: custom {op}: {reason}")
    return "\n".join(lines)


# ---- the torch part ----

def _meta_of(value):
    """(shape, dtype) of a FakeTensor, a list of those for tuples, None for non-tensors."""
    if isinstance(value, (list, tuple)):
        return [_meta_of(v) for v in value]
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return ([int(d) for d in value.shape], aten.TORCH_DTYPES.get(str(value.dtype), "f32"))
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


def _torch_dirs():
    import torch
    return (os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,)


def export_program(ep, name, description):
    """Walks an ExportedProgram's graph and writes the format.
    Returns (graph dict, fallbacks [(aten op, reason)], origins {FX node name: [graph node names]})."""
    import operator
    w = GraphWriter(name, description)
    names, fallbacks = {}, []
    roles, skip = _input_roles(ep), _torch_dirs()
    for node in ep.graph.nodes:
        meta = _meta_of(node.meta.get("val"))
        w.origin, w.source = node.name, source_location(node.meta.get("stack_trace"), skip)
        if node.op == "placeholder":
            role, label = roles.get(node.name, ("activation", node.name))
            if meta is not None:
                names[node.name] = w.add_input(label, meta[0], meta[1], role)
        elif node.op == "call_function" and node.target is operator.getitem:
            base = names.get(node.args[0].name)
            names[node.name] = base[node.args[1]] if isinstance(base, list) else None
        elif node.op == "call_function" and meta is not None:  # asserts and other ops without a tensor result
            args = [aten.fx_value(a, names) for a in node.args]
            kwargs = {k: aten.fx_value(v, names) for k, v in node.kwargs.items()}
            ins = [w.types.get(r.name, (None, None)) for r in aten.flatten_refs(args)]
            op = aten.aten_name(node.target)
            result, reason = aten.map_call(w, node.name, op, args, kwargs, {"in": ins, "out": meta})
            if reason:
                fallbacks.append((op, reason))
            names[node.name] = result
        elif node.op == "output":
            for r in aten.flatten_refs([aten.fx_value(a, names) for a in node.args[0]]):
                if r.name not in w.outputs:
                    w.outputs.append(r.name)
    w.origin = w.source = None
    return w.to_json(), fallbacks, w.origins


def load_factory(spec):
    """'pkg.mod:fn' -> the factory's result as (module, example inputs or None, name, description)."""
    if ":" not in spec:
        raise ExportError(f"{spec!r}: name a factory as MODULE:FUNCTION (e.g. mypkg.models:make_model) "
                          "or a .pt2 file")
    mod_name, fn_name = spec.split(":", 1)
    sys.path.insert(0, os.getcwd())
    try:
        fn = getattr(importlib.import_module(mod_name), fn_name)
    except (ImportError, AttributeError) as e:
        raise ExportError(f"{spec}: cannot load: {e}") from e
    result = fn()
    if isinstance(result, tuple):
        module, example = result[0], tuple(result[1])
        name = result[2] if len(result) > 2 else fn_name
        desc = result[3] if len(result) > 3 else f"{spec}, captured with torch.export"
        return module, example, name, desc
    return result, None, fn_name, f"{spec}, captured with torch.export"


def make_inputs(specs, device):
    import torch
    out = []
    for name, dtype, dims in specs:
        t = getattr(torch, DTYPE_NAMES[dtype])
        if dtype == "bool":
            out.append(torch.zeros(dims, dtype=t, device=device))
        elif dtype in ("i32", "i64"):
            out.append(torch.randint(0, 2, dims, dtype=t, device=device))
        else:
            out.append(torch.randn(dims, dtype=t, device=device))
    return tuple(out)


def capture(spec, input_specs, device="cpu"):
    """Loads a factory or a .pt2 file and returns (ExportedProgram, module or None, example inputs, name, desc)."""
    import torch
    if spec.endswith(".pt2"):
        if not os.path.isfile(spec):
            raise ExportError(f"{spec}: no such file")
        ep = torch.export.load(spec)
        name = os.path.splitext(os.path.basename(spec))[0]
        example = ep.example_inputs[0] if getattr(ep, "example_inputs", None) else None
        return ep, None, example, name, f"{spec} (torch.export.save), loaded with torch.export.load"
    module, example, name, desc = load_factory(spec)
    if input_specs:
        example = make_inputs([parse_input_spec(s) for s in input_specs], device)
    if example is None:
        raise ExportError(f"{spec} returns only a module: give its inputs with --input NAME=DTYPE[dims]")
    module = module.to(device).eval()
    example = tuple(x.to(device) if hasattr(x, "to") else x for x in example)
    with torch.no_grad():
        ep = torch.export.export(module, example)
    return ep, module, example, name, desc


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m fusion_explorer.export", description=__doc__.split("\n")[0])
    p.add_argument("model", nargs="?", help="MODULE:FUNCTION returning a module, or a .pt2 file")
    p.add_argument("--input", action="append", default=[], metavar="NAME=DTYPE[dims]",
                   help="an example input, e.g. x=f32[8,1024,768]; repeat for several, in forward()'s order")
    p.add_argument("-o", "--output")
    p.add_argument("--device", default="cpu", help="where to run the capture (cpu, cuda)")
    p.add_argument("--save-pt2", metavar="FILE", help="also save the ExportedProgram with torch.export.save")
    p.add_argument("--cli", help="fusion-cli: validate, turning rejected nodes into custom")
    p.add_argument("--repair", metavar="GRAPH", help="only validate and repair an existing graph file (needs --cli)")
    args = p.parse_args(argv)
    try:
        return run(args, p)
    except ExportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def run(args, p):
    if args.repair:
        if not args.cli:
            p.error("--repair needs --cli")
        import json
        graph = json.load(open(args.repair))
        replaced = repair.repair(graph, repair.cli_validator(args.cli))
        write_json(graph, args.repair)
        print(f"{args.repair}: replaced {len(replaced)} node(s) by custom: {replaced}")
        return 0
    if not args.model or not args.output:
        p.error("name a model (MODULE:FUNCTION or FILE.pt2) and -o OUTPUT")
    ep, _, _, name, desc = capture(args.model, args.input, args.device)
    if args.save_pt2:
        import torch
        torch.export.save(ep, args.save_pt2)
    graph, fallbacks, _ = export_program(ep, name, desc)
    if args.cli:
        for node_name, op in repair.repair(graph, repair.cli_validator(args.cli)):
            fallbacks.append((op, f"rejected by fusion-cli validate ({node_name})"))
    write_json(graph, args.output)
    print(f"{args.output}: " + summarize(graph, fallbacks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
