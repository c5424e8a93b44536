"""What torch.compile's Inductor did with a module: which exported nodes it put in each kernel, which kernels are
library calls, and every reason its scheduler gave for not fusing two nodes, as a plan file with
"source": "inductor" that Fusion Explorer opens next to its own plan (`fusion-cli diff`, GUI "Compare with plan").

    python -m fusion_explorer.inductor mypkg.models:make_model --input x=f32[8,1024,768] -o inductor_plan.json \\
        [--graph model.json] [--capture capture.json] [--device cuda] [--time 50]
    python -m fusion_explorer.inductor --from-capture capture.json -o inductor_plan.json

The module is exported with torch.export (the same graph `fusion_explorer.export` writes), and the exported
program is compiled by Inductor's compile_fx, the function torch.compile's "inductor" backend calls on the
graph Dynamo captures. Compiling the exported program itself, not a second Dynamo capture, lets every FX node
Inductor schedules be traced back (node.meta["from_node"]) to a node of the exported graph. While it compiles,
the scheduler is observed: its final nodes (one kernel each; extern nodes are library calls) and its WhyNoFuse
reasons. Caches are off for the compile, so the scheduler really runs.
"""
import argparse
import inspect
import json
import logging
import sys

from . import export, inductor_plan
from .graph_format import write_json

FUSION_LOGGER = "torch._inductor.scheduler.__fusion"  # getArtifactLogger(scheduler's __name__, "fusion")


def _source_names(fx_node):
    """Every (name, graph id or None, depth) on the node's provenance chain (meta["from_node"])."""
    out, stack = [], [(s, 1) for s in (fx_node.meta.get("from_node") or [])]
    while stack:
        src, depth = stack.pop()
        if isinstance(src, (tuple, list)):  # older torch: (name, target) pairs
            out.append((src[0], None, depth))
            continue
        out.append((src.name, getattr(src, "graph_id", None), depth))
        stack += [(s, depth + 1) for s in (getattr(src, "from_node", None) or [])]
    return out


class OriginResolver:
    """Maps an FX node Inductor scheduled to the exported program's node names it came from."""

    def __init__(self, export_names, graph_id):
        self.export_names, self.graph_id = set(export_names), graph_id
        self.by_graph_id = 0  # how many were matched by graph identity, and by name alone
        self.by_name = 0
        self.unmatched = 0

    def __call__(self, fx_node):
        chain = _source_names(fx_node)
        exact = sorted({n for n, gid, _ in chain if gid == self.graph_id and n in self.export_names})
        if exact:
            self.by_graph_id += 1
            return exact
        # The compiled graph was copied on the way (or torch records no graph ids): the shallowest ancestor
        # with an exported node's name, i.e. the node in the graph AOTAutograd traced.
        named = [(depth, n) for n, _, depth in chain if n in self.export_names]
        if named:
            self.by_name += 1
            return [min(named)[1]]
        self.unmatched += 1
        return []


def _kind(snode, sched):
    if snode.is_extern():
        return "extern"
    if snode.is_template():
        return "template"
    for kind, cls in (("nop", "NopKernelSchedulerNode"), ("foreach", "ForeachKernelSchedulerNode"),
                      ("fused", "FusedSchedulerNode")):
        if isinstance(snode, getattr(sched, cls, ())):
            return kind
    return "single"


def _kernel_name(snode, kind):
    node = getattr(snode, "node", None)
    if kind == "extern" and node is not None:
        for attr in ("python_kernel_name", "cpp_kernel_name"):
            if getattr(node, attr, None):
                return str(getattr(node, attr))
        return type(node).__name__
    return snode.get_name()


def _sub_names(sub):
    names = [sub.get_name()]
    try:
        names += [b.get_name() for b in sub.get_outputs()]
    except AttributeError:
        pass
    return names


def record_scheduler(scheduler, sched, resolve):
    """The scheduler's final nodes and a name table {scheduler/buffer name: [exported FX names]}."""
    kernels, names = [], {}
    for snode in scheduler.nodes:
        kind = _kind(snode, sched)
        ops, fx = [], []
        for sub in snode.get_nodes():
            origins = sorted({o for origin in getattr(getattr(sub, "node", None), "origins", ()) or ()
                              for o in resolve(origin)})
            for name in _sub_names(sub):
                names[name] = origins
            ops.append(sub.get_name())
            fx += [o for o in origins if o not in fx]
        device = snode.get_device()
        kernels.append({"name": snode.get_name(), "kind": kind, "kernel": _kernel_name(snode, kind), "ops": ops,
                        "origins": fx, "device": str(device) if device is not None else None})
    return {"kernels": kernels, "names": names, "reasons": []}


class _ReasonLog(logging.Handler):
    """Collects "cannot fuse" log records that are plain text (WhyNoFuse records are taken from the call)."""

    def __init__(self, pending):
        super().__init__(logging.DEBUG)
        self.pending = pending  # one list of reasons per scheduler being built

    def emit(self, record):
        msg = record.msg
        if type(msg).__name__ == "WhyNoFuse" or not isinstance(msg, str) or not self.pending:
            return
        text = record.getMessage()
        if text.startswith("cannot fuse "):
            head, _, reason = text[len("cannot fuse "):].partition(": ")
            a, _, b = head.partition(" with ")
            self.pending[-1].append({"node1": a, "node2": b, "reason": reason})


def _why_names(why):
    if hasattr(why, "name1"):
        return why.name1, why.name2
    return why.node1.get_name(), why.node2.get_name()


class SchedulerObserver:
    """Patches Scheduler.__init__ and WhyNoFuse.__call__ for the duration of a `with` block."""

    def __init__(self, resolve):
        from torch._inductor import scheduler as sched
        self.sched, self.resolve, self.runs, self.pending = sched, resolve, [], []

    def __enter__(self):
        sched, observer = self.sched, self
        self.orig_init, self.orig_call = sched.Scheduler.__init__, sched.WhyNoFuse.__call__

        def init(scheduler, *args, **kwargs):
            observer.pending.append([])
            try:
                observer.orig_init(scheduler, *args, **kwargs)
            finally:
                reasons = observer.pending.pop()
            run = record_scheduler(scheduler, sched, observer.resolve)
            run["reasons"] = reasons
            observer.runs.append(run)

        def call(why, reason, *args):
            observer.orig_call(why, reason, *args)
            if observer.pending:
                a, b = _why_names(why)
                try:
                    text = reason % args if args else reason
                except (TypeError, ValueError):  # a message whose arguments do not fit: keep both as they are
                    text = f"{reason} {args!r}"
                observer.pending[-1].append({"node1": a, "node2": b, "reason": text})

        sched.Scheduler.__init__, sched.WhyNoFuse.__call__ = init, call
        self.logger = logging.getLogger(FUSION_LOGGER)
        self.saved_level, self.handler = self.logger.level, _ReasonLog(self.pending)
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self.handler)
        return self

    def __exit__(self, *exc):
        self.sched.Scheduler.__init__, self.sched.WhyNoFuse.__call__ = self.orig_init, self.orig_call
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.saved_level)
        return False


def _unlifted(ep):
    if "check_guards" in inspect.signature(ep.module).parameters:
        return ep.module(check_guards=False)
    return ep.module()


def _time_us(fn, inputs, repeats):
    import time
    import torch
    cuda = any(getattr(x, "is_cuda", False) for x in inputs)
    fn(*inputs)
    samples = []
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(*inputs)
        if cuda:
            torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) * 1e6)
    return sorted(samples)[len(samples) // 2]


def capture(spec, input_specs, device="cpu", repeats=0):
    """Exports the model, compiles it with Inductor while observing the scheduler, returns the capture dict."""
    import torch
    from torch._inductor import config
    from torch._inductor.compile_fx import compile_fx
    ep, _, example, name, desc = export.capture(spec, input_specs, device)
    graph, fallbacks, origins = export.export_program(ep, name, desc)
    gm = _unlifted(ep)
    resolve = OriginResolver([n.name for n in ep.graph.nodes], id(gm.graph))
    flat = [x for x in example if isinstance(x, torch.Tensor)]
    result = {"format": inductor_plan.CAPTURE_FORMAT, "version": 1, "torch": torch.__version__,
              "device": device, "model": spec, "graph": graph, "origins": origins,
              "fallbacks": [list(f) for f in fallbacks]}
    if device.startswith("cuda"):
        result["device_name"] = torch.cuda.get_device_name()
        try:
            import triton
            result["triton"] = triton.__version__
        except ImportError:
            pass
    patches = {k: v for k, v in (("force_disable_caches", True), ("fx_graph_cache", False))
               if hasattr(config, k)}
    with SchedulerObserver(resolve) as observer, config.patch(patches), torch.no_grad():
        try:
            compiled = compile_fx(gm, flat)
        except Exception as e:  # noqa: BLE001 - the scheduler's record is still worth writing
            if not observer.runs:
                raise
            compiled, result["compile_error"] = None, f"{type(e).__name__}: {e}"
    result["schedulers"] = observer.runs
    result["matched"] = {"by_graph_identity": resolve.by_graph_id, "by_name": resolve.by_name,
                         "unmatched": resolve.unmatched}
    if compiled is not None and repeats:
        with torch.no_grad():
            result["measured_time_us"] = _time_us(compiled, flat, repeats)
    return result


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m fusion_explorer.inductor", description=__doc__.split("\n")[0])
    p.add_argument("model", nargs="?", help="MODULE:FUNCTION returning a module, or a .pt2 file")
    p.add_argument("--input", action="append", default=[], metavar="NAME=DTYPE[dims]")
    p.add_argument("-o", "--output", required=True, help="the plan file to write")
    p.add_argument("--graph", help="also write the exported graph (the plan's graph part) to this file")
    p.add_argument("--capture", help="also write the raw capture (what tests and fixtures are made of)")
    p.add_argument("--from-capture", metavar="FILE", help="convert a capture written earlier; needs no torch")
    p.add_argument("--device", default="cpu")
    p.add_argument("--time", type=int, default=0, metavar="N", help="time the compiled module, median of N runs")
    args = p.parse_args(argv)
    try:
        if args.from_capture:
            with open(args.from_capture) as f:
                cap = json.load(f)
        elif args.model:
            cap = capture(args.model, args.input, args.device, args.time)
        else:
            p.error("name a model (MODULE:FUNCTION or FILE.pt2) or --from-capture FILE")
        plan = inductor_plan.to_plan(cap)
    except (export.ExportError, inductor_plan.CaptureError, OSError, json.JSONDecodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.capture and not args.from_capture:
        write_json(cap, args.capture)
    if args.graph:
        write_json(cap["graph"], args.graph)
    write_json(plan, args.output)
    print(f"{args.output}: " + inductor_plan.summary(plan))
    if cap.get("compile_error"):
        print(f"warning: Inductor's compile failed after scheduling: {cap['compile_error']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
