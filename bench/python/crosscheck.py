"""Cross-checks Fusion Explorer's results against PyTorch, from a dump written by `fusion-cli run --dump DIR`.

The dump layout (the contract between fusion-cli and this harness):

    DIR/manifest.json          {"graph": "<graph file path, absolute or relative to DIR>",
                                "inputs": {"<input name>": "inputs/<input name>.npy", ...},
                                "outputs": ["<output name>", ...]}
    DIR/inputs/<name>.npy      every graph input exactly as fed to both plans
    DIR/unfused/<output>.npy   each graph output computed by the unfused plan (one kernel per op)
    DIR/fused/<output>.npy     each graph output computed by the fused plan

.npy files are C-order with the tensor's shape; dtypes f32 '<f4', f16 '<f2', i32 '<i4', i64 '<i8', bool '|b1',
and bf16 as '<u2' holding the raw bfloat16 bits (numpy has no bfloat16; an '<f4' file is accepted too).
A manifest "inputs" value may also be an object {"file": ...}, or "inputs" a list of {"name", "file", ...}
entries (what fusion-cli writes); a missing entry means inputs/<name>.npy.

What is compared, per output: the relative error ||ours - ref|| / ||ref|| of both plans against a float64
PyTorch reference run on the upcast dump inputs, with a threshold set by the output's path (fx_graph.tolerance:
f32 1e-5, f32 matmul/conv 2e-3 for TF32, anything f16/bf16 1e-2). NaN never passes. PyTorch eager in the graph's
own dtypes is reported beside it, to show what the framework itself achieves.

Dropout: our mask comes from Philox keyed by (seed, element index); PyTorch cannot reproduce it, and the dump
holds no mask. So an output with one dropout upstream and only element-to-element ops after it is checked
per element: the reference runs twice, with every element kept (x / (1-p)) and every element dropped (0);
each of our elements must match one of the two (the error is measured against that choice, with the usual
threshold), and among elements where the two differ, the fraction matched to "dropped" must lie within
6 sigma of p (binomial). The unfused and fused plans share the mask, so they must also agree with each other.
Other dropout shapes (two dropouts, a reduction after dropout) are reported as SKIP, never as a pass.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fx_graph  # noqa: E402
import fx_torch  # noqa: E402

PLANS = ("unfused", "fused")


def load_npy(path, dtype, device):
    arr = np.load(path, allow_pickle=False)
    want = fx_torch.TORCH_DTYPES[dtype]
    if dtype == "bf16" and arr.dtype == np.uint16:
        return torch.from_numpy(arr.view(np.int16).copy()).to(device).view(torch.bfloat16)
    # not np.ascontiguousarray: it returns at least one dimension, so a 0-d input (a BN's num_batches_tracked)
    # would come back with shape (1,)
    return torch.from_numpy(np.array(arr, order="C", copy=True)).to(device).to(want)


def load_dump(dump_dir, graph_path=None, device="cuda"):
    with open(os.path.join(dump_dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    path = graph_path or manifest["graph"]
    if not os.path.isabs(path) and not os.path.exists(path):
        path = os.path.join(dump_dir, path)
    graph = fx_graph.Graph.load(path)
    files = manifest.get("inputs", {})
    if isinstance(files, list):  # fusion-cli writes a list of {"name", "file", "dtype", "shape"} entries
        files = {e["name"]: e for e in files if isinstance(e, dict) and "name" in e}
    inputs = {}
    for i in graph.inputs:
        entry = files.get(i.name, f"inputs/{i.name}.npy")
        rel = entry["file"] if isinstance(entry, dict) else entry
        t = load_npy(os.path.join(dump_dir, rel), i.type.dtype, device)
        if tuple(t.shape) != i.type.shape:
            raise ValueError(f"dump input {i.name}: shape {tuple(t.shape)}, graph says {i.type.shape}")
        inputs[i.name] = t
    results = {plan: {} for plan in PLANS}
    for plan in PLANS:
        for o in graph.outputs:
            p = os.path.join(dump_dir, plan, f"{o}.npy")
            if os.path.exists(p):
                results[plan][o] = load_npy(p, graph.types[o].dtype, device)
    return graph, inputs, results


def rel_error(ours, ref):
    """||ours - ref|| / ||ref|| in float64; inf when ours holds a NaN/inf or the shapes differ."""
    if tuple(ours.shape) != tuple(ref.shape):
        return math.inf
    a, b = ours.to(torch.float64), ref.to(torch.float64)
    if not torch.isfinite(a).all():
        return math.inf
    num = torch.linalg.vector_norm(a - b).item()
    den = torch.linalg.vector_norm(b).item()
    return num / den if den > 0 else num


class Report:
    def __init__(self, echo=True):
        self.lines, self.failures, self.skips, self.echo = [], 0, 0, echo

    def add(self, status, text):
        self.lines.append(f"{status:4}  {text}")
        self.failures += status == "FAIL"
        self.skips += status == "SKIP"
        if self.echo:
            print(self.lines[-1], flush=True)


def _check_exact(graph, out, tol, ref, ours, report):
    for plan, value in ours.items():
        err = rel_error(value, ref)
        report.add("ok" if err <= tol else "FAIL", f"{graph.name}/{out} {plan}: rel error {err:.3g} "
                   f"(threshold {tol:g})")


def _check_dropout(graph, out, tol, refs, ours, report):
    keep, drop = refs["keep"][out], refs["drop"][out]
    p = next(float(n.attrs.get("p", 0.5)) for n in graph.nodes
             if n.op == "dropout" and n.name in fx_graph.ancestors(graph, out))
    scale = torch.linalg.vector_norm(keep).item() / math.sqrt(max(keep.numel(), 1))
    distinct = (keep - drop).abs() > 100 * tol * scale
    for plan, value in ours.items():
        v = value.to(torch.float64)
        chose_drop = (v - drop).abs() < (v - keep).abs()
        err = rel_error(value, torch.where(chose_drop, drop, keep))
        n = int(distinct.sum().item())
        frac = (chose_drop & distinct).sum().item() / max(n, 1)
        bound = 6 * math.sqrt(p * (1 - p) / max(n, 1)) + 1e-3
        ok = err <= tol and n >= 1000 and abs(frac - p) <= bound
        report.add("ok" if ok else "FAIL", f"{graph.name}/{out} {plan}: per-element rel error {err:.3g} "
                   f"(threshold {tol:g}); dropped {frac:.4f} of {n} distinguishable elements, p={p} +- {bound:.4f}")
    if set(ours) == {"fused", "unfused"}:
        err = rel_error(ours["fused"], ours["unfused"])
        report.add("ok" if err <= tol else "FAIL", f"{graph.name}/{out} fused vs unfused (same Philox mask): "
                   f"rel error {err:.3g}")


def graph_has_f32_contraction(graph):
    return any(n.op in ("matmul", "conv2d") and graph.types[n.inputs[0]].dtype == "f32" for n in graph.nodes)


def check(graph, inputs, results, report, plans=PLANS):
    """Every output of each plan in `plans` (results[plan][output]) against the float64 reference."""
    ref_fn = fx_torch.build_function(graph, "reference")
    wide = fx_torch.upcast(inputs)
    with torch.no_grad():
        has_dropout = any(n.op == "dropout" for n in graph.nodes)
        refs = {h: ref_fn(wide, dropout_hypothesis=h) for h in (("keep", "drop") if has_dropout else ("keep",))}
        eager = fx_torch.build_function(graph)(inputs)
    for out in graph.outputs:
        tol = fx_graph.tolerance(graph, out)
        ours = {plan: results[plan][out] for plan in plans if out in results[plan]}
        missing = [plan for plan in plans if out not in results[plan]]
        if missing:
            report.add("FAIL", f"{graph.name}/{out}: no result from plan(s) {', '.join(missing)} in the dump")
        kind, why = fx_graph.dropout_plan(graph, out)
        if kind == "exact":
            eager_err = rel_error(eager[out], refs["keep"][out])
            report.add("info", f"{graph.name}/{out} PyTorch eager ({graph.types[out].dtype}): rel error "
                       f"{eager_err:.3g}")
            # Through deep TF32 chains (softmax of scores amplifies the matmul rounding) PyTorch itself exceeds
            # the per-op threshold; there ours must be as accurate as PyTorch eager in the same precision.
            if graph_has_f32_contraction(graph) and math.isfinite(eager_err) and 1.5 * eager_err > tol:
                report.add("info", f"{graph.name}/{out}: threshold raised to 1.5x PyTorch eager's own TF32 error")
                tol = 1.5 * eager_err
            _check_exact(graph, out, tol, refs["keep"][out], ours, report)
        elif kind == "per_element":
            _check_dropout(graph, out, tol, refs, ours, report)
        else:
            report.add("SKIP", f"{graph.name}/{out}: not compared with PyTorch: {why}")


def run_cli_and_check(cli, graph_path, work_dir, cli_args, report, keep=False):
    name = os.path.splitext(os.path.basename(graph_path))[0]
    custom = [n for n in fx_graph.Graph.load(graph_path).nodes if n.op == "custom"]
    if custom:  # an imported op the format only carries (a `custom` node): neither side can run it
        report.add("SKIP", f"{name}: not run: node {custom[0].name} is a custom op ({custom[0].attrs.get('label', '?')}) "
                   "that neither fusion-cli nor PyTorch can execute")
        return
    dump = os.path.join(work_dir, name)
    cmd = [cli, "run", graph_path, *cli_args, "--dump", dump]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        report.add("FAIL", f"{name}: `{' '.join(cmd)}` exited {proc.returncode}: "
                   f"{(proc.stderr or proc.stdout).strip()[-400:]}")
        return
    graph, inputs, results = load_dump(dump, graph_path)
    check(graph, inputs, results, report)
    if not keep:
        shutil.rmtree(dump, ignore_errors=True)  # full-size dumps are gigabytes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dumps", nargs="*", help="dump directories written by fusion-cli run --dump")
    ap.add_argument("--graph", help="graph file, overriding the manifest's path (one dump only)")
    ap.add_argument("--cli", help="fusion-cli to run on --samples first, dumping into --work-dir")
    ap.add_argument("--samples", nargs="*", default=[], help="graph files for --cli")
    ap.add_argument("--work-dir", default="/tmp/fx-crosscheck")
    ap.add_argument("--cli-args", default="--auto --no-profile",
                    help="extra arguments for `fusion-cli run`, as --cli-args='...' (default --auto --no-profile: "
                         "the check reads the dumped outputs, not the CUPTI counter pass)")
    ap.add_argument("--keep", action="store_true", help="keep the dumps written with --cli")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True  # the eager line should show what TF32 eager achieves
    torch.backends.cudnn.allow_tf32 = True
    report = Report()
    for dump in args.dumps:
        graph, inputs, results = load_dump(dump, args.graph, args.device)
        check(graph, inputs, results, report)
    if args.cli:
        os.makedirs(args.work_dir, exist_ok=True)
        for path in args.samples:
            try:
                run_cli_and_check(args.cli, path, args.work_dir, args.cli_args.split(), report, args.keep)
            except Exception as e:  # one broken sample must not hide the others' results
                report.add("FAIL", f"{path}: {type(e).__name__}: {e}")
            torch.cuda.empty_cache()
    print(f"crosscheck: {report.failures} failed, {report.skips} skipped, {len(report.lines)} lines")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
