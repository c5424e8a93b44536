"""Tests of the PyTorch half of the harness on the CPU, on the sample graphs shrunk to small shapes: the
generated functions run, decomposed samples agree with their one-op forms, and the cross-check passes a
correct dump, fails a corrupted one, and checks dropout per element. Skipped where torch or numpy is missing
(plain python3 on the build machine); runs wherever python3 has both.
"""
import glob
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import numpy as np
    import torch
except ImportError:  # the build machine's python3 has neither
    torch = None

SAMPLES = os.path.join(HERE, "..", "..", "sample_graphs")
# Big dimensions of the samples -> small ones that keep every relation (768 = 12 heads x 64 -> 12 x 8, 2304 =
# 3 x 768 -> 3 x 96, 8192 = 8 x 1024 -> 8 x 16).
SHRINK = {8192: 128, 16384: 48, 4096: 32, 1024: 16, 512: 8, 56: 6, 3072: 48, 768: 96, 64: 8, 224: 32, 2304: 288, 1536: 192}


def shrunk(name):
    import fx_graph
    with open(os.path.join(SAMPLES, name + ".json"), encoding="utf-8") as f:
        doc = json.load(f)
    for i in doc["inputs"]:
        i["shape"] = [SHRINK.get(d, d) for d in i["shape"]]
    for n in doc["nodes"]:
        for stated in ("shape", "dtype"):  # resnet18 states its nodes' types: inferred again at the small size
            n.pop(stated, None)
        if n["op"] == "reshape":
            n["attrs"]["shape"] = [SHRINK.get(d, d) for d in n["attrs"]["shape"]]
        if n["op"] == "slice":  # gpt2_block_hf splits q, k and v at 768 and 1536
            for end in ("start", "end"):
                if end in n["attrs"]:
                    n["attrs"][end] = SHRINK.get(n["attrs"][end], n["attrs"][end])
    return fx_graph.Graph.from_dict(doc)


def save_npy(path, t):
    if t.dtype == torch.bfloat16:  # the dump contract: raw bf16 bits as uint16
        arr = t.contiguous().view(torch.int16).numpy().view(np.uint16)
    else:
        arr = t.numpy()
    np.save(path, arr)


def write_dump(root, graph, graph_path, inputs, unfused, fused):
    for sub in ("inputs", "unfused", "fused"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    for name, t in inputs.items():
        save_npy(os.path.join(root, "inputs", name + ".npy"), t)
    for plan, outs in (("unfused", unfused), ("fused", fused)):
        for name, t in outs.items():
            save_npy(os.path.join(root, plan, name + ".npy"), t)
    manifest = {"graph": graph_path, "inputs": {n: f"inputs/{n}.npy" for n in inputs}, "outputs": graph.outputs}
    with open(os.path.join(root, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f)


@unittest.skipIf(torch is None, "torch and numpy are not installed for this python3")
class TorchOnCpu(unittest.TestCase):
    def setUp(self):
        import crosscheck
        import fx_torch
        self.fx_torch, self.crosscheck = fx_torch, crosscheck

    def run_graph(self, graph, mode="native", inputs=None, **kw):
        inputs = inputs if inputs is not None else self.fx_torch.make_inputs(graph, "cpu")
        if mode == "reference":
            inputs = self.fx_torch.upcast(inputs)
        with torch.no_grad():
            return self.fx_torch.build_function(graph, mode)(inputs, **kw)

    def test_every_sample_runs_and_eager_meets_its_own_threshold(self):
        import fx_graph
        for path in sorted(glob.glob(os.path.join(SAMPLES, "*.json"))):
            name = os.path.splitext(os.path.basename(path))[0]
            g = shrunk(name)
            inputs = self.fx_torch.make_inputs(g, "cpu")
            ref = self.run_graph(g, "reference", inputs)
            out = self.run_graph(g, "native", inputs)
            for o in g.outputs:
                self.assertEqual(tuple(out[o].shape), g.types[o].shape, f"{name}/{o}")
                self.assertEqual(out[o].dtype, self.fx_torch.TORCH_DTYPES[g.types[o].dtype], f"{name}/{o}")
                # Row-major like the format's outputs (transpose_chain's eager result is a permuted view otherwise).
                self.assertTrue(out[o].is_contiguous(), f"{name}/{o}")
                if fx_graph.dropout_plan(g, o)[0] == "exact":
                    err = self.crosscheck.rel_error(out[o], ref[o])
                    self.assertLess(err, fx_graph.tolerance(g, o), f"{name}/{o}")

    def test_decomposed_samples_match_their_fused_forms(self):
        for decomposed, whole in (("softmax_decomposed", "softmax"), ("gelu_tanh_decomposed", None)):
            g = shrunk(decomposed)
            inputs = self.fx_torch.make_inputs(g, "cpu")
            got = self.run_graph(g, "reference", inputs)["y"]
            x = inputs["x"].double()
            want = (self.run_graph(shrunk(whole), "reference", inputs)["y"] if whole
                    else torch.nn.functional.gelu(x, approximate="tanh"))
            self.assertLess(self.crosscheck.rel_error(got, want), 1e-9, decomposed)

    def test_inputs_are_seeded_and_never_zero(self):
        g = shrunk("conv_bn_relu")
        a, b = self.fx_torch.make_inputs(g, "cpu"), self.fx_torch.make_inputs(g, "cpu")
        for name in a:
            self.assertTrue(torch.equal(a[name], b[name]))
            self.assertGreater(a[name].abs().sum().item(), 0)
        self.assertGreater(a["var"].min().item(), 0)

    def check_dump(self, graph, inputs, unfused, fused):
        with tempfile.TemporaryDirectory() as tmp:
            graph_path = os.path.join(tmp, "g.json")
            with open(graph_path, "w", encoding="utf-8") as f:
                json.dump({"format": "fusion-explorer/graph", "version": 1, "name": graph.name,
                           "inputs": [{"name": i.name, "shape": list(i.type.shape), "dtype": i.type.dtype}
                                      for i in graph.inputs],
                           "nodes": [{"name": n.name, "op": n.op, "inputs": n.inputs, "attrs": n.attrs}
                                     for n in graph.nodes], "outputs": graph.outputs}, f)
            write_dump(tmp, graph, "g.json", inputs, unfused, fused)
            g, ins, results = self.crosscheck.load_dump(tmp, device="cpu")
            report = self.crosscheck.Report(echo=False)
            self.crosscheck.check(g, ins, results, report)
            return report

    def test_crosscheck_passes_correct_and_fails_corrupted_results(self):
        for name in ("relu_mul_add", "mlp_gelu_bf16", "exp_two_consumers"):
            g = shrunk(name)
            inputs = self.fx_torch.make_inputs(g, "cpu")
            good = self.run_graph(g, "native", inputs)
            self.assertEqual(self.check_dump(g, inputs, good, good).failures, 0, name)
            bad = {k: v.clone() for k, v in good.items()}
            first = g.outputs[0]
            bad[first].view(-1)[: max(1, bad[first].numel() // 10)] *= 1.5
            report = self.check_dump(g, inputs, good, bad)
            self.assertEqual(report.failures, 1, name)
            self.assertTrue(any(line.startswith("FAIL") and f"/{first} fused" in line for line in report.lines))
            nan = {k: v.clone() for k, v in good.items()}
            nan[first].view(-1)[0] = float("nan")
            self.assertEqual(self.check_dump(g, inputs, nan, good).failures, 1, name)

    def test_zero_dim_inputs_keep_their_shape(self):
        # resnet18's BN counters (num_batches_tracked) are i64 scalars of shape []
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "n.npy")
            np.save(path, np.array(7, dtype=np.int64))
            t = self.crosscheck.load_npy(path, "i64", "cpu")
            self.assertEqual(tuple(t.shape), ())
            self.assertEqual(t.item(), 7)

    def test_dropout_checked_per_element(self):
        g = shrunk("dropout_chain")
        inputs = self.fx_torch.make_inputs(g, "cpu")
        torch.manual_seed(3)
        ours = self.run_graph(g, "native", inputs)  # PyTorch's mask stands in for our Philox mask
        report = self.check_dump(g, inputs, ours, ours)
        self.assertEqual(report.failures, 0, "\n".join(report.lines))
        no_dropout = self.run_graph(g, "reference", inputs, dropout_hypothesis="keep")
        report = self.check_dump(g, inputs, ours, {"y": no_dropout["y"].float()})
        self.assertGreaterEqual(report.failures, 2, "\n".join(report.lines))  # wrong rate, plans disagree


if __name__ == "__main__":
    unittest.main()
