"""Inductor's decisions, recorded by inductor.py, as a plan in Fusion Explorer's fused-graph format. Plain Python
(no torch): CI converts recorded captures with it.

A capture ("fusion-explorer/inductor-capture") holds the exported graph, which graph nodes each FX node of the
exported program became (`origins`), and for each run of Inductor's scheduler its final nodes (kernels) with
the FX nodes they compute, and every "cannot fuse" reason the scheduler gave for a pair of its nodes.

The plan is a partition of the graph's nodes: a node goes to the last kernel (in Inductor's order) that computes
part of it, i.e. the one that writes its value; other kernels that computed parts of it (a split reduction's
first pass, say) are listed on the group as `also_in` (assign_nodes says how a contraction is placed). Nodes Inductor ran no kernel for (views it turned into
reinterpretations) become groups of their own marked `"kernel": null`.
"""
import re

from . import schema


CAPTURE_FORMAT = "fusion-explorer/inductor-capture"

# Inductor's reason texts, grouped into codes (ours where the meaning is the same) so the GUI and the diff can
# group and filter them. The text itself is kept in full. Patterns follow torch/_inductor/scheduler.py.
REASON_CODES = [
    (r"exceeds max fusion|max_fusion_size|too many nodes", "MAX_FUSION_SIZE"),
    (r"cycle|intermediate nodes between", "CYCLE"),
    (r"no shared data|no shared buffer|not share|no common", "NOT_RELATED"),
    (r"numel|rnumel|ranges? mismatch|shape|loop orders? differ|incompatible", "SHAPE_MISMATCH"),
    (r"extern|template|not a scheduler node|is_extern|nop", "OPAQUE_OP"),
    (r"reduction", "REDUCTION_FOLLOWED_BY_REDUCTION"),
    (r"spill|register", "REGISTER_PRESSURE"),
    (r"peak memory|memory", "PEAK_MEMORY"),
    (r"profitab|slower|benchmark|speedup|not worth", "NOT_PROFITABLE"),
    (r"device", "DIFFERENT_DEVICES"),
]


class CaptureError(ValueError):
    """A capture file that cannot be converted; the message says which part."""


def reason_code(text):
    for pattern, code in REASON_CODES:
        if re.search(pattern, text, re.IGNORECASE):
            return code
    return "INDUCTOR_OTHER"


def _node_order(graph):
    return {n["name"]: i for i, n in enumerate(graph["nodes"])}


def _kernels(capture):
    """Every scheduler node of every scheduler run, in order, with the graph nodes it computes."""
    origins = capture["origins"]
    out = []
    for run_index, run in enumerate(capture["schedulers"]):
        for k in run["kernels"]:
            nodes = []
            for fx in k["origins"]:
                nodes += [n for n in origins.get(fx, []) if n not in nodes]
            out.append(dict(k, run=run_index, graph_nodes=nodes))
    return out


CONTRACTIONS = ("matmul", "conv2d")


def assign_nodes(capture):
    """{graph node: index into the kernel list} and the kernel list. One FX node can become several graph
    nodes (linear: matmul + bias add) and be computed by several kernels (an extern mm, then the bias add fused
    into a pointwise kernel): a contraction goes to the last library/template kernel among its kernels, any
    other node to the last kernel that is not a library call, so the matmul lands on the mm and the add on the
    kernel that adds the bias. Nodes only views touched (nop kernels) go to the nop."""
    kernels = _kernels(capture)
    ops = {n["name"]: n["op"] for n in capture["graph"]["nodes"]}
    computed_by = {}
    for i, k in enumerate(kernels):
        for n in k["graph_nodes"]:
            computed_by.setdefault(n, []).append(i)
    owner, also = {}, {}
    for n, ks in computed_by.items():
        real = [i for i in ks if kernels[i]["kind"] != "nop"] or ks
        library = [i for i in real if kernels[i]["kind"] in ("extern", "template")]
        generated = [i for i in real if kernels[i]["kind"] not in ("extern", "template")]
        pool = library if ops.get(n) in CONTRACTIONS and library else (generated or real)
        owner[n] = pool[-1]
        if len(pool) > 1:
            also[n] = pool[:-1]
    return owner, also, kernels


class _NameMap:
    """A scheduler node's name ("op3", or "op3_op4" for a fused one) -> the graph nodes it computes: the graph
    nodes of its FX origins that were placed on its kernel (so the extern mm of a linear names the matmul, not
    the bias add), or all of them when none was (a split reduction's first pass)."""

    def __init__(self, capture, owner, kernels):
        self.origins, self.owner = capture["origins"], owner
        self.kernel_of_op = {}
        for i, k in enumerate(kernels):
            for op in k["ops"]:
                self.kernel_of_op[(k["run"], op)] = i

    def __call__(self, run_index, run, name):
        table = run.get("names", {})
        parts = [name] if name in table else name.split("_")
        nodes = []
        for part in parts:
            candidates = [n for fx in table.get(part, []) for n in self.origins.get(fx, [])]
            kernel = self.kernel_of_op.get((run_index, part))
            placed = [n for n in candidates if self.owner.get(n) == kernel]
            nodes += [n for n in (placed or candidates) if n not in nodes]
        return nodes


def pair_reasons(capture, group_of, order, names):
    """Inductor's "cannot fuse" reasons as pairs of graph-node lists; a pair that ended up in one kernel
    anyway (fused later by another route) is dropped, and so is one whose nodes have no graph node."""
    seen, out, dropped = set(), [], {"unmapped": 0, "fused_later": 0}
    for run_index, run in enumerate(capture["schedulers"]):
        for r in run.get("reasons", []):
            a = sorted(names(run_index, run, r["node1"]), key=order.get)
            b = sorted(names(run_index, run, r["node2"]), key=order.get)
            if not a or not b:
                dropped["unmapped"] += 1
                continue
            groups = {group_of.get(n) for n in a + b}
            if len(groups) == 1:
                dropped["fused_later"] += 1
                continue
            key = (tuple(a), tuple(b), r["reason"])
            if key in seen:
                continue
            seen.add(key)
            out.append({"a": a, "b": b, "source": "inductor", "code": reason_code(r["reason"]),
                        "message": f"cannot fuse {r['node1']} with {r['node2']}: {r['reason']}"})
    return out, dropped


def _group_entry(index, k, nodes, also):
    entry = {"id": f"k{index}", "nodes": nodes, "kernel": k["kernel"] if k["kind"] != "nop" else None,
             "kind": k["kind"], "library": k["kind"] == "extern", "inductor_nodes": k["ops"]}
    if also:
        entry["also_in"] = also
    return entry


def to_plan(capture):
    """The capture as a plan document (graph + "fusion" section with "source": "inductor")."""
    if capture.get("format") != CAPTURE_FORMAT:
        raise CaptureError(f"/format: expected {CAPTURE_FORMAT!r}, got {capture.get('format')!r}")
    for key in ("graph", "origins", "schedulers", "torch"):
        if key not in capture:
            raise CaptureError(f"/{key}: missing")
    try:
        schema.check(capture, "inductor_capture")
    except schema.SchemaError as e:
        raise CaptureError(str(e)) from e
    graph = capture["graph"]
    order = _node_order(graph)
    owner, also_by_node, kernels = assign_nodes(capture)
    members = {}
    for n in sorted(owner, key=order.get):
        members.setdefault(owner[n], []).append(n)
    groups, group_of = [], {}
    for i, k in enumerate(kernels):
        if i not in members:
            continue
        also = sorted({f"k{j}" for n in members[i] for j in also_by_node.get(n, [])})
        groups.append(_group_entry(i, k, members[i], also))
        for n in members[i]:
            group_of[n] = f"k{i}"
    for n in graph["nodes"]:
        if n["name"] not in owner:
            groups.append({"id": f"none:{n['name']}", "nodes": [n["name"]], "kernel": None, "kind": "none",
                           "library": False, "inductor_nodes": []})
            group_of[n["name"]] = f"none:{n['name']}"
    groups.sort(key=lambda g: min(order[x] for x in g["nodes"]))
    reasons, dropped = pair_reasons(capture, group_of, order, _NameMap(capture, owner, kernels))
    launched = [g for g in groups if g["kernel"] is not None]
    fusion = {"source": "inductor",
              "producer": {k: capture[k] for k in ("torch", "device", "device_name", "triton", "model")
                           if k in capture},
              "kernels": len({g["id"] for g in launched}) + len(_kernels_without_nodes(kernels, members)),
              "groups": groups, "pair_reasons": reasons,
              "notes": _notes(kernels, members, dropped)}
    if "measured_time_us" in capture:
        fusion["measured_time_us"] = capture["measured_time_us"]
    doc = dict(graph)
    doc["fusion"] = fusion
    return doc


def _kernels_without_nodes(kernels, members):
    return [i for i, k in enumerate(kernels) if i not in members and k["kind"] != "nop"]


def _notes(kernels, members, dropped):
    notes = []
    extra = _kernels_without_nodes(kernels, members)
    if extra:
        notes.append(f"{len(extra)} Inductor kernel(s) compute only parts of nodes written by a later kernel "
                     f"(e.g. a split reduction's first pass): " + ", ".join(kernels[i]["name"] for i in extra))
    if dropped["unmapped"]:
        notes.append(f"{dropped['unmapped']} reason(s) name scheduler nodes with no counterpart in the graph")
    if dropped["fused_later"]:
        notes.append(f"{dropped['fused_later']} reason(s) were about pairs Inductor fused later by another route")
    return notes


def summary(plan):
    """Lines for people: kernels, library calls, fused groups, reasons by code."""
    f = plan["fusion"]
    groups = f["groups"]
    fused = [g for g in groups if len(g["nodes"]) > 1]
    library = [g for g in groups if g.get("library")]
    codes = {}
    for r in f["pair_reasons"]:
        codes[r["code"]] = codes.get(r["code"], 0) + 1
    lines = [f"Inductor ({f['producer'].get('torch', '?')}, {f['producer'].get('device', '?')}): "
             f"{f['kernels']} kernels, {len(library)} library calls, {len(fused)} groups of more than one node, "
             f"{len(f['pair_reasons'])} reasons for not fusing"]
    lines += [f"  {code}: {n}" for code, n in sorted(codes.items(), key=lambda kv: -kv[1])]
    lines += [f"  note: {n}" for n in f["notes"]]
    return "\n".join(lines)
