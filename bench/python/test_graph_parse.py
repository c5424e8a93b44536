"""Unit tests of the harness's plain-Python half: graph parsing and shape inference, minimum bytes, the
comparison rules, the generated PyTorch source, and the benchmark report. Run with plain python3 (no torch):
    python3 -m unittest discover -s bench/python -p "test_*.py"
"""
import contextlib
import glob
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_report  # noqa: E402
import fx_codegen  # noqa: E402
import fx_graph  # noqa: E402
import gpu_clocks  # noqa: E402
import make_samples  # noqa: E402
import pairs  # noqa: E402
import queue_plan  # noqa: E402

SAMPLES = os.path.join(HERE, "..", "..", "sample_graphs")
MIB = 2**20
REPO = os.path.join(HERE, "..", "..")
RECORDED_RUN = os.path.join(REPO, "tests", "data", "run-reports", "relu_mul_add.h100.json")


def step(name, ms, path=None):
    """One entry of a plan's kernels as fusion-cli run --json writes it."""
    k = {"name": name, "group": "g:" + name, "nodes": [name], "bytes": 0, "measured_ms": ms}
    if path is not None:
        k["path"] = path
    return k


def run_doc(unfused, fused, timing=None):
    """A run report as fusion-cli writes it (the recorded relu_mul_add one) with these fields in its two plans (and
    this timing), read through the package's run_report: a test document the schema rejects fails here."""
    with open(RECORDED_RUN, encoding="utf-8") as f:
        doc = json.load(f)
    for plan, fields in zip(doc["plans"], (unfused, fused)):
        for key in ("stepped_ms", "graph_ms"):
            plan.pop(key, None)
        plan.update(fields)
        plan["kernel_count"] = len(plan["kernels"])
    if timing is not None:
        doc["timing"] = timing
    return bench_report.run_report.parse_run_report(doc)


def load(name):
    return fx_graph.Graph.load(os.path.join(SAMPLES, name + ".json"))


def tiny(nodes, inputs=None, outputs=("y",)):
    return {"format": fx_graph.FORMAT, "version": 1, "name": "t",
            "inputs": inputs or [{"name": "x", "shape": [4, 6], "dtype": "f32"}],
            "nodes": nodes, "outputs": list(outputs)}


class SampleFiles(unittest.TestCase):
    def test_all_generated_samples_parse_and_are_up_to_date(self):
        # The 24 workshop samples come from make_samples.py; the rest (resnet18, gpt2_block_hf) were written by
        # python -m fusion_explorer.export from real PyTorch models and must parse and be formatted the same way.
        files = sorted(glob.glob(os.path.join(SAMPLES, "*.json")))
        generated_names = {g["name"] for g in make_samples.all_samples()}
        self.assertEqual(len(generated_names), 26)
        self.assertTrue(generated_names <= {os.path.basename(p)[:-5] for p in files})
        for path in files:
            g = fx_graph.Graph.load(path)
            self.assertEqual(g.name + ".json", os.path.basename(path))
            self.assertTrue(g.description)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            self.assertEqual(text, make_samples.dumps(json.loads(text)))
        generated = {g["name"]: make_samples.dumps(g) for g in make_samples.all_samples()}
        for name, text in generated.items():
            with open(os.path.join(SAMPLES, name + ".json"), encoding="utf-8") as f:
                self.assertEqual(f.read(), text, f"{name}.json differs from make_samples.py; rerun it")

    def test_min_bytes_match_the_reference_counts(self):
        # relu(x*w+b): 3 reads + 1 write of 256 MiB (the fused minimum)
        self.assertEqual(load("relu_mul_add").min_bytes(), 4 * 256 * MIB)
        self.assertEqual(load("sigmoid_chain").min_bytes(), 5 * 256 * MIB)
        self.assertEqual(load("sin_cos").min_bytes(), 3 * 256 * MIB)
        self.assertEqual(load("sum_of_squares").min_bytes(), 256 * MIB + 16384 * 4)
        self.assertEqual(load("layernorm").min_bytes(), 2 * 256 * MIB + 2 * 4096 * 4)
        self.assertEqual(load("cast_chain").min_bytes(), 2 * 256 * MIB)
        self.assertEqual(load("mlp_gelu_bf16").min_bytes(), 2 * (8192 * 4096 * 2 + 4096 * 4096 + 4096))

    def test_gpt2_block_shapes(self):
        g = load("gpt2_block")
        self.assertEqual(g.types["q_h"].shape, (8, 12, 1024, 64))
        self.assertEqual(g.types["scores"].shape, (8, 12, 1024, 1024))
        self.assertEqual(g.types["merged"].shape, (8, 1024, 768))
        self.assertEqual(g.types["act"].shape, (8, 1024, 3072))
        self.assertEqual(g.types["y"].shape, (8, 1024, 768))
        self.assertTrue(g.has_contraction())

    def test_conv_output_and_multi_outputs(self):
        self.assertEqual(load("conv_bn_relu").types["y"].shape, (32, 64, 56, 56))
        self.assertEqual(load("qkv_bf16").outputs, ["q", "k", "v"])
        self.assertEqual(load("cast_chain").types["h"].dtype, "f16")


@unittest.skipUnless(os.access(os.environ.get("FX_CLI", ""), os.X_OK), "FX_CLI does not name a built fusion-cli")
class AgreesWithTheCppLoader(unittest.TestCase):
    """This module and core/graph must read the samples alike: same bytes for inputs, outputs, intermediates."""

    def test_byte_counts_match_fusion_cli_info(self):
        for path in sorted(glob.glob(os.path.join(SAMPLES, "*.json"))):
            g = fx_graph.Graph.load(path)
            info = json.loads(subprocess.run([os.environ["FX_CLI"], "info", path, "--json"], check=True,
                                             capture_output=True, text=True).stdout)
            self.assertEqual(info["input_bytes"] + info["weight_bytes"] + info["output_bytes"], g.min_bytes(), path)
            intermediates = sum(n.type.nbytes for n in g.nodes if n.name not in g.outputs)
            self.assertEqual(info["intermediate_bytes"], intermediates, path)
            self.assertEqual(info["ops"], g.op_counts(), path)


class Inference(unittest.TestCase):
    def infer(self, nodes, inputs=None, outputs=("y",)):
        return fx_graph.Graph.from_dict(tiny(nodes, inputs, outputs))

    def test_broadcast_and_scalar_literal(self):
        g = self.infer([{"name": "y", "op": "add", "inputs": ["x", "b"]}, {"name": "z", "op": "mul",
                        "inputs": [0.5, "y"]}], [{"name": "x", "shape": [4, 1, 6], "dtype": "f32"},
                                                 {"name": "b", "shape": [5, 1], "dtype": "f32"}], ["z"])
        self.assertEqual(g.types["z"].shape, (4, 5, 6))

    def test_reductions_keepdim_and_axes(self):
        g = self.infer([{"name": "y", "op": "sum", "inputs": ["x"], "attrs": {"axis": [0, -1], "keepdim": True}},
                        {"name": "z", "op": "max", "inputs": ["x"]}], outputs=["y", "z"])
        self.assertEqual(g.types["y"].shape, (1, 1))
        self.assertEqual(g.types["z"].shape, (4,))

    def test_matmul_transposes_and_batch_broadcast(self):
        g = self.infer([{"name": "y", "op": "matmul", "inputs": ["a", "b"], "attrs": {"transpose_b": True}}],
                       [{"name": "a", "shape": [2, 1, 3, 5], "dtype": "f32"},
                        {"name": "b", "shape": [4, 7, 5], "dtype": "f32"}])
        self.assertEqual(g.types["y"].shape, (2, 4, 3, 7))

    def test_layout_ops(self):
        g = self.infer([{"name": "r", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [3, -1]}},
                        {"name": "c", "op": "concat", "inputs": ["x", "x"], "attrs": {"axis": 1}},
                        {"name": "s", "op": "slice", "inputs": ["x"], "attrs": {"axis": 1, "start": 1, "end": 6,
                                                                              "step": 2}},
                        {"name": "t", "op": "topk", "inputs": ["x"], "attrs": {"k": 2}},
                        {"name": "y", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [1, 0]}}],
                       outputs=["r", "c", "s", "t", "y"])
        self.assertEqual([g.types[n].shape for n in "rcsty"], [(3, 8), (4, 12), (4, 3), (4, 2), (6, 4)])

    def test_compare_where_cast_dtypes(self):
        g = self.infer([{"name": "m", "op": "gt", "inputs": ["x", 0]},
                        {"name": "w", "op": "where", "inputs": ["m", "x", 0.0]},
                        {"name": "y", "op": "cast", "inputs": ["w"], "attrs": {"dtype": "bf16"}}], outputs=["m", "y"])
        self.assertEqual((g.types["m"].dtype, g.types["y"].dtype), ("bool", "bf16"))

    def test_errors_name_the_node(self):
        cases = [
            ([{"name": "y", "op": "matmul", "inputs": ["x", "x"]}], "inner dimensions"),
            ([{"name": "y", "op": "frobnicate", "inputs": ["x"]}], "unknown op"),
            ([{"name": "y", "op": "relu", "inputs": ["nope"]}], "unknown input 'nope'"),
            ([{"name": "y", "op": "relu", "inputs": ["z"]}, {"name": "z", "op": "relu", "inputs": ["y"]}], "cycle"),
            ([{"name": "y", "op": "custom", "inputs": ["x"], "attrs": {"label": "k"}}], "must state"),
            ([{"name": "y", "op": "relu", "inputs": ["x"], "shape": [4, 7], "dtype": "f32"}], "states f32[4, 7]"),
            ([{"name": "y", "op": "sum", "inputs": ["x"], "attrs": {"axis": 2}}], "axis 2 out of range"),
        ]
        for nodes, message in cases:
            with self.assertRaises(fx_graph.GraphError) as ctx:
                self.infer(nodes)
            self.assertIn(message, str(ctx.exception))
            self.assertIn("node", str(ctx.exception))

    def test_nodes_in_any_order(self):
        g = self.infer([{"name": "y", "op": "relu", "inputs": ["a"]}, {"name": "a", "op": "exp", "inputs": ["x"]}])
        self.assertEqual([n.name for n in g.nodes], ["a", "y"])

    def test_bad_header(self):
        doc = tiny([{"name": "y", "op": "relu", "inputs": ["x"]}])
        doc["version"] = 2
        self.assertRaisesRegex(fx_graph.GraphError, "version", fx_graph.Graph.from_dict, doc)


class ComparisonRules(unittest.TestCase):
    def test_tolerance_follows_the_path(self):
        self.assertEqual(fx_graph.tolerance(load("relu_mul_add"), "y"), fx_graph.TOLERANCE_F32)
        self.assertEqual(fx_graph.tolerance(load("mlp_relu_f32"), "y"), fx_graph.TOLERANCE_TF32)
        self.assertEqual(fx_graph.tolerance(load("swiglu_bf16"), "y"), fx_graph.TOLERANCE_HALF)
        self.assertEqual(fx_graph.tolerance(load("cast_chain"), "y"), fx_graph.TOLERANCE_HALF)
        # Unfused bf16 attention rounds its scores to bf16 (as PyTorch eager does): twice the half tolerance.
        self.assertEqual(fx_graph.tolerance(load("attention_bf16"), "ctx"), 2 * fx_graph.TOLERANCE_HALF)
        self.assertEqual(fx_graph.tolerance(load("mlp_gelu_erf_bf16"), "y"), fx_graph.TOLERANCE_HALF)

    def test_dropout_plan(self):
        self.assertEqual(fx_graph.dropout_plan(load("dropout_chain"), "y"), ("per_element", ""))
        self.assertEqual(fx_graph.dropout_plan(load("relu_mul_add"), "y"), ("exact", ""))
        g = fx_graph.Graph.from_dict(tiny([{"name": "d", "op": "dropout", "inputs": ["x"], "attrs": {"p": 0.1}},
                                           {"name": "y", "op": "sum", "inputs": ["d"]}]))
        kind, why = fx_graph.dropout_plan(g, "y")
        self.assertEqual(kind, "unsupported")
        self.assertIn("y mixes dropout", why)


class MaxPool2d(unittest.TestCase):
    """max_pool2d's window arithmetic and refusals, as core/graph's (stride defaults to 1, as ONNX's)."""

    def pool(self, attrs, shape=(2, 3, 112, 112), dtype="f32"):
        return fx_graph.Graph.from_dict(tiny([{"name": "y", "op": "max_pool2d", "inputs": ["x"], "attrs": attrs}],
                                             [{"name": "x", "shape": list(shape), "dtype": dtype}]))

    def test_shapes(self):
        self.assertEqual(self.pool({"kernel_size": 3, "stride": 2, "padding": 1}).types["y"].shape, (2, 3, 56, 56))
        self.assertEqual(self.pool({"kernel_size": [2, 4], "stride": [2, 4]}).types["y"].shape, (2, 3, 56, 28))
        self.assertEqual(self.pool({"kernel_size": 2, "dilation": 2}).types["y"].shape, (2, 3, 110, 110))
        self.assertEqual(self.pool({"kernel_size": [3], "stride": [2], "padding": [1]}).types["y"].shape,
                         (2, 3, 56, 56))  # one value in a list serves both dimensions

    def test_refusals(self):
        for attrs, shape, dtype, message in (({"kernel_size": 3, "padding": 2}, None, "f32", "half the window"),
                                             ({"stride": 2}, None, "f32", "kernel_size"),
                                             ({"kernel_size": 0}, None, "f32", "positive"),
                                             ({"kernel_size": 200}, None, "f32", "empty"),
                                             ({"kernel_size": 2}, (4, 8), "f32", "NCHW"),
                                             ({"kernel_size": 2}, None, "i32", "f32, f16 or bf16")):
            with self.assertRaisesRegex(fx_graph.GraphError, message):
                self.pool(attrs, shape or (2, 3, 112, 112), dtype)


class Codegen(unittest.TestCase):
    def test_every_sample_generates_valid_python_in_both_modes(self):
        for path in glob.glob(os.path.join(SAMPLES, "*.json")):
            g = fx_graph.Graph.load(path)
            for mode in ("native", "reference"):
                if any(n.op == "custom" for n in g.nodes):  # an imported op with no PyTorch meaning
                    with self.assertRaises(Exception):
                        fx_codegen.function_source(g, mode)
                    continue
                compile(fx_codegen.function_source(g, mode), path, "exec")

    def test_relu_mul_add_source(self):
        src = fx_codegen.function_source(load("relu_mul_add"))
        self.assertIn("    mul = (x * w)\n    add = (mul + b)\n    y = torch.relu(add)\n", src)
        self.assertIn("return {'y': y.contiguous()}", src)

    def test_op_translations(self):
        g = load("gpt2_block")
        ids = fx_codegen.identifiers(g)
        expr = {n.name: fx_codegen.node_expression(n, g, ids) for n in g.nodes}
        self.assertEqual(expr["scores"], "torch.matmul(q_h, k_h.mT)")
        self.assertEqual(expr["act"], "F.gelu(fc_b, approximate='tanh')")
        self.assertEqual(expr["q_h"], "q_r.permute((0, 2, 1, 3))")
        self.assertEqual(expr["ln1"], "F.layer_norm(x, (768,), weight=ln1_g, bias=ln1_b, eps=1e-05)")
        drop = load("dropout_chain")
        node = next(n for n in drop.nodes if n.op == "dropout")
        ids = fx_codegen.identifiers(drop)
        self.assertEqual(fx_codegen.node_expression(node, drop, ids), "F.dropout(mul, p=0.1, training=True)")
        self.assertIn("dropout_hypothesis", fx_codegen.node_expression(node, drop, ids, "reference"))

    def test_every_op_translates(self):
        x = {"name": "x", "shape": [2, 3, 4, 4], "dtype": "f32"}
        v = {"name": "v", "shape": [3], "dtype": "f32"}
        single = {op: [] for op in fx_graph.UNARY + ("sort", "softmax", "dropout")}
        nodes = [{"name": f"n_{op}", "op": op, "inputs": ["x", *rest]} for op, rest in single.items()]
        nodes += [{"name": f"n_{op}", "op": op, "inputs": ["x", 2.0]} for op in fx_graph.BINARY + fx_graph.COMPARE]
        nodes += [{"name": "n_maxt", "op": "maximum", "inputs": ["x", "x"]},
                  {"name": "n_bn", "op": "batchnorm", "inputs": ["x", "v", "v", "v", "v"]},
                  {"name": "n_rms", "op": "rmsnorm", "inputs": ["x", "w4"]},
                  {"name": "n_conv", "op": "conv2d", "inputs": ["x", "cw"], "attrs": {"padding": [1, 1]}},
                  {"name": "n_pool", "op": "max_pool2d", "inputs": ["x"],
                   "attrs": {"kernel_size": 3, "stride": 2, "padding": 1}}]
        g = fx_graph.Graph.from_dict(tiny(nodes, [x, v, {"name": "w4", "shape": [4], "dtype": "f32"},
                                                  {"name": "cw", "shape": [5, 3, 3, 3], "dtype": "f32"}],
                                          ["n_conv"]))
        src = fx_codegen.function_source(g)
        self.assertIn("torch.clamp(x, min=2.0)", src)
        self.assertIn("torch.maximum(x, x)", src)
        self.assertIn("F.rms_norm(x, (4,), weight=w4, eps=1e-06)", src)
        self.assertIn("F.max_pool2d(x, kernel_size=3, stride=2, padding=1, dilation=1)", src)
        self.assertEqual(g.types["n_pool"].shape, (2, 3, 2, 2))
        compile(src, "every_op", "exec")
        custom = fx_graph.Graph.from_dict(tiny([{"name": "y", "op": "custom", "inputs": ["x"], "shape": [4, 6],
                                                 "dtype": "f32", "attrs": {"label": "myop"}}]))
        self.assertRaisesRegex(fx_codegen.UnsupportedOp, "myop", fx_codegen.function_source, custom)

    def test_positive_inputs(self):
        g = fx_graph.Graph.from_dict(tiny([{"name": "y", "op": "div", "inputs": ["x", "d"]}],
                                          [{"name": "x", "shape": [3], "dtype": "f32"},
                                           {"name": "d", "shape": [3], "dtype": "f32"}]))
        self.assertEqual(fx_codegen.positive_inputs(g), {"d"})
        self.assertEqual(fx_codegen.positive_inputs(load("conv_bn_relu")), {"var"})


class Report(unittest.TestCase):
    def test_read_fx_plan_reads_the_schemas_fields(self):
        doc = run_doc({"kernels": [step("a", 0.2), step("b", 0.3)], "total_ms": 0.5, "stepped_ms": 0.52},
                      {"kernels": [step("f", 0.25)], "total_ms": 0.25, "graph_ms": None})
        self.assertEqual(bench_report.read_fx_plan(doc, "unfused"), {"ms": 0.5, "kernels": 2, "stepped_ms": 0.52})
        # graph_ms null: the run had no --cuda-graph; no number, never a zero
        self.assertEqual(bench_report.read_fx_plan(doc, "fused"), {"ms": 0.25, "kernels": 1})

    def test_run_reports_are_read_through_the_published_schema(self):
        report = bench_report.load_fx_report(RECORDED_RUN)
        self.assertEqual(bench_report.read_fx_plan(report, "fused"),
                         {"ms": report["plans"][1]["total_ms"], "kernels": 1, "graph_ms": report["plans"][1]["graph_ms"]})
        with tempfile.TemporaryDirectory() as tmp:
            def written(name, change):
                doc = json.loads(json.dumps(report))
                change(doc)
                path = os.path.join(tmp, name)
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(doc, f)
                return path
            newer = written("newer.json", lambda d: d.update(version=2))
            with self.assertRaisesRegex(bench_report.ReportError, "newer.json: .*/version: .*version 2"):
                bench_report.load_fx_report(newer)
            # bench.py's round: both plans say why, naming the file, instead of reading fields of another version
            got = bench_report.read_fx_round(newer)
            self.assertEqual(set(got), {"fx_unfused", "fx_fused"})
            self.assertRegex(got["fx_fused"]["error"], "newer.json: not a run report this harness reads: /version")
            graph = written("graph.json", lambda d: d.update(format="fusion-explorer/graph"))
            with self.assertRaisesRegex(bench_report.ReportError, "graph.json: .*/format: "):
                bench_report.load_fx_report(graph)
            renamed = written("renamed.json", lambda d: d["plans"][1].update(name="auto"))
            with self.assertRaisesRegex(bench_report.ReportError, "renamed.json: .*/plans/1/name"):
                bench_report.load_fx_report(renamed)
            broken = os.path.join(tmp, "broken.json")
            with open(broken, "w", encoding="utf-8") as f:
                f.write("{")
            with self.assertRaisesRegex(bench_report.ReportError, "broken.json"):
                bench_report.load_fx_report(broken)
        fault = bench_report.fx_round(bench_report.load_fx_report(
            os.path.join(REPO, "tests", "data", "run-reports", "gpu_fault.h100.json")))
        self.assertRegex(fault["fx_fused"]["error"], "^the run stopped at a GPU fault: GPU fault: cudaErrorIllegalAddress")

    def test_every_recorded_run_report_reads_as_a_round(self):
        paths = []
        for path in glob.glob(os.path.join(REPO, "docs", "data", "runs", "**", "*.json"), recursive=True):
            with open(path, encoding="utf-8") as f:
                if '"fusion-explorer/run"' in f.read():
                    paths.append(path)
        self.assertGreaterEqual(len(paths), 2)
        for path in paths:
            got = bench_report.read_fx_round(path)
            for key in ("fx_unfused", "fx_fused"):
                self.assertNotIn("error", got[key], path)
                self.assertEqual(len(got[key]["steps"][0]), got[key]["kernels"], path)

    def test_derive_and_tables(self):
        row = {"name": "relu_mul_add", "min_bytes": 4 * 256 * MIB, "has_contraction": False,
               "eager": {"ms": [0.5, 0.51], "kernels": 3}, "compile": {"ms": [0.25, 0.25], "kernels": 1},
               "fx_unfused": {"error": "fusion-cli not found"}, "fx_fused": {"ms": [0.2, 0.22], "kernels": 1}}
        bench_report.derive(row, 4.22e12)
        self.assertAlmostEqual(row["ratio_fused_compile"], 0.8)
        self.assertEqual([round(x, 3) for x in row["ratios"]["fused_compile"]], [0.8, 0.88])
        self.assertEqual(row["ratios"]["unfused_eager"], [])  # no FX unfused numbers: no ratio, never a zero
        self.assertAlmostEqual(row["bw_fraction"]["compile"], 4 * 256 * MIB / 0.25e-3 / 4.22e12)
        self.assertIsNone(row["bw_fraction"]["fx_unfused"])
        self.assertAlmostEqual(row["spread"], 0.1)
        text = bench_report.text_table([row])
        self.assertIn("0.500 (0.510)", text)
        self.assertIn("0.800 (0.880)", text)
        self.assertIn("n/a", text)
        md = bench_report.markdown({"device": "H200", "torch": "2.11", "triton": "3.6", "copy_tb_s": 4.22,
                                    "samples": [row]})
        self.assertIn("| relu_mul_add | 1024.0 |", md)
        # Each version's bandwidth has its column, FX unfused's "n/a" here (no numbers), fused's 0.2 ms -> 1.27
        header = next(line for line in md.splitlines() if line.startswith("| sample"))
        cells = [c.strip() for c in header.strip("|").split("|")]
        data = next(line for line in md.splitlines() if line.startswith("| relu_mul_add"))
        values = dict(zip(cells, (c.strip() for c in data.strip("|").split("|"))))
        self.assertEqual([values[c] for c in ("bw eager", "bw compile", "bw FX unfused", "bw FX fused")],
                         ["0.51", "1.02", "n/a", "1.27"])
        # no copy of the sample's own bytes in this row: its columns say n/a, never a fraction of nothing
        self.assertEqual([values[c] for c in ("same-bytes copy TB/s", "bw* compile", "bw* FX fused")],
                         ["n/a", "n/a", "n/a"])
        self.assertIn("- relu_mul_add FX unfused: fusion-cli not found", md)
        self.assertIn("- unfused / eager <= 1.2: met on 0 of 1; not measured: relu_mul_add", md)

    def test_targets_hold_in_every_round_and_name_each_miss(self):
        def row(name, contraction, eager, compiled, unfused, fused, k_fused=1, k_compile=2):
            return bench_report.derive({"name": name, "min_bytes": 256 * MIB, "has_contraction": contraction,
                                        "eager": {"ms": eager, "kernels": 3},
                                        "compile": {"ms": compiled, "kernels": k_compile},
                                        "fx_unfused": {"ms": unfused, "kernels": 3},
                                        "fx_fused": {"ms": fused, "kernels": k_fused}}, 1e12)
        rows = [row("fast", False, [0.5, 0.5], [0.3, 0.3], [0.5, 0.5], [0.268, 0.268]),
                # faster in round 1 only: a miss, with both rounds' ratios
                row("tie", False, [0.5, 0.5], [0.3, 0.3], [0.65, 0.5], [0.29, 0.302]),
                row("gemm", True, [1.0, 1.0], [0.9, 0.9], [1.0, 1.0], [0.8, 0.8]),
                row("gemm_more_kernels", True, [1.0, 1.0], [0.9, 0.9], [1.0, 1.0], [0.8, 0.8], k_fused=2)]
        lines = bench_report.targets(rows)
        # each round's difference in microseconds beside the ratios: 0.29 - 0.3 ms, 0.302 - 0.3 ms
        self.assertEqual(lines[0], "fused / torch.compile <= 1.0: met on 3 of 4; not met: tie 0.967 / 1.007 "
                                   "(-10.0 / +2.0 us)")
        self.assertEqual(lines[1], "unfused / eager <= 1.2: met on 3 of 4; not met: tie 1.300 / 1.000")
        # 256 MiB in 0.268 ms against a 1 TB/s copy: 1.002; in 0.29 ms: 0.926
        # no queued times in these rows: those targets are not measured, never met by default
        self.assertEqual(lines[2], "fused / torch.compile queued <= 1.0: met on 0 of 4; not measured: fast, tie, gemm, "
                                   "gemm_more_kernels")
        self.assertEqual(lines[4], "elementwise/reduction: FX fused >= 0.95 of copy bandwidth (round 1): met on 1 of "
                                   "2; not met: tie 0.926")
        self.assertEqual(lines[5], "contraction: FX fused <= torch.compile with fewer kernels: met on 1 of 2; "
                                   "not met: gemm_more_kernels 0.889 / 0.889 (-100.0 / -100.0 us), 2 vs 2 kernels")
        # against a copy of the same bytes: not measured in these rows, so not met by default
        self.assertEqual(lines[7], "elementwise/reduction: FX fused >= 0.95 of a copy of the same bytes (round 1): "
                                   "met on 0 of 2; not measured: fast, tie")
        only_gemms = bench_report.targets(rows[2:])
        self.assertEqual(only_gemms[4], "elementwise/reduction: FX fused >= 0.95 of copy bandwidth (round 1): no "
                                        "sample of this run")

    def test_bandwidth_against_a_copy_of_the_same_bytes(self):
        # sum_of_squares' 256 MiB read in about 0.095 ms after the flush, against illustrative copy rates: a 1 GiB copy at 3.02 TB/s, one of 128 MiB to 128 MiB at 2.80 TB/s
        row = bench_report.derive({"name": "sum_of_squares", "min_bytes": 256 * MIB, "has_contraction": False,
                                   "copy_same_bytes_tb_s": 2.80,
                                   "compile": {"ms": [0.0953], "kernels": 1},
                                   "fx_fused": {"ms": [0.0951], "kernels": 1}}, 3.02e12)
        self.assertAlmostEqual(row["bw_fraction"]["fx_fused"], 256 * MIB / 0.0951e-3 / 3.02e12)
        self.assertAlmostEqual(row["bw_fraction_same_bytes"]["fx_fused"], 256 * MIB / 0.0951e-3 / 2.80e12)
        self.assertIsNone(row["bw_fraction_same_bytes"]["eager"])  # no eager time
        lines = bench_report.targets([row])
        self.assertEqual(lines[4], "elementwise/reduction: FX fused >= 0.95 of copy bandwidth (round 1): met on 0 of "
                                   "1; not met: sum_of_squares 0.935")
        self.assertEqual(lines[7], "elementwise/reduction: FX fused >= 0.95 of a copy of the same bytes (round 1): "
                                   "met on 1 of 1")
        header, body = bench_report.table_rows([row])
        values = dict(zip(header, body[0]))
        self.assertEqual([values[c] for c in ("same-bytes copy TB/s", "bw* compile", "bw* FX fused")],
                         ["2.80", "1.01", "1.01"])
        # a contraction has neither fraction
        gemm = bench_report.derive({"name": "m", "min_bytes": 1, "has_contraction": True, "copy_same_bytes_tb_s": 1.0,
                                    "fx_fused": {"ms": [1.0], "kernels": 1}}, 1e12)
        self.assertIsNone(gemm["bw_fraction_same_bytes"]["fx_fused"])

    def test_queued_times_give_their_own_ratios_targets_and_host_bound_notes(self):
        # conv_bn_relu as measured on an H100: torch.compile's five kernels about 0.078 ms, do_bench 0.16-0.23 ms
        # (the host's time to launch them from Python); Fusion Explorer's plan 0.087 ms.
        row = bench_report.derive({"name": "conv_bn_relu", "min_bytes": MIB, "has_contraction": True,
                                   "eager": {"ms": [0.150, 0.151], "queued_ms": [0.149, 0.150], "kernels": 6},
                                   "compile": {"ms": [0.203, 0.161], "queued_ms": [0.085, 0.088], "kernels": 5},
                                   "fx_unfused": {"ms": [0.120, 0.121], "kernels": 5},
                                   "fx_fused": {"ms": [0.087, 0.087], "kernels": 3}}, 1e12)
        self.assertEqual([round(x, 3) for x in row["ratios"]["fused_compile_queued"]], [1.024, 0.989])
        self.assertEqual([round(x, 3) for x in row["ratios"]["fused_compile"]], [0.429, 0.540])
        lines = bench_report.targets([row])
        self.assertEqual(lines[0], "fused / torch.compile <= 1.0: met on 1 of 1")
        # the queued comparison is the stricter one here, and names the miss with its microseconds
        self.assertEqual(lines[2], "fused / torch.compile queued <= 1.0: met on 0 of 1; not met: conv_bn_relu "
                                   "1.024 / 0.989 (+2.0 / -1.0 us)")
        self.assertEqual(lines[3], "unfused / eager queued <= 1.2: met on 1 of 1")
        notes = bench_report.notes([row])
        self.assertEqual(notes, ["conv_bn_relu torch.compile: host-bound: 0.203 / 0.161 ms in do_bench, "
                                 "0.085 / 0.088 ms with its launches queued"])
        text = bench_report.text_table([row])
        self.assertIn("0.085 (0.088)", text)
        self.assertIn("1.024 (0.989)", text)

    def test_our_plans_replayed_as_cuda_graphs_give_the_gpu_only_ratio_and_host_bound_notes(self):
        # A host-bound plan (resnet18's fused plan of 20 cuDNN calls): launched step by step it takes longer than
        # replayed as a CUDA graph, and only the graph's time compares with torch.compile's queued time.
        doc = run_doc({"kernels": [step("u", 0.1)], "total_ms": 2.628},
                      {"kernels": [step(f"k{i}", 0.01) for i in range(34)], "total_ms": 2.520, "graph_ms": 0.955})
        self.assertEqual(bench_report.read_fx_plan(doc, "fused"), {"ms": 2.520, "kernels": 34, "graph_ms": 0.955})
        doc["plans"][1]["graph_ms"] = None  # run without --cuda-graph: no number, never a zero
        self.assertNotIn("graph_ms", bench_report.read_fx_plan(doc, "fused"))
        row = bench_report.derive({"name": "resnet18", "min_bytes": MIB, "has_contraction": True,
                                   "eager": {"ms": [2.150, 3.321], "queued_ms": [2.145, 2.147], "kernels": 121},
                                   "compile": {"ms": [1.467, 1.345], "queued_ms": [1.210, 1.209], "kernels": 61},
                                   "fx_unfused": {"ms": [2.628, 1.927], "graph_ms": [1.830, 1.821], "kernels": 103},
                                   "fx_fused": {"ms": [2.520, 0.999], "graph_ms": [0.955, 0.957], "kernels": 34}}, 1e12)
        self.assertEqual([round(x, 3) for x in row["ratios"]["fused_graph_compile_queued"]], [0.789, 0.792])
        lines = bench_report.targets([row])
        self.assertEqual(lines[6], "fused as a CUDA graph / torch.compile queued <= 1.0: met on 1 of 1")
        self.assertIn("not met: resnet18 2.083 / 0.826", lines[2])
        notes = bench_report.notes([row])
        self.assertIn("resnet18 FX fused: host-bound: 2.520 / 0.999 ms launched step by step, 0.955 / 0.957 ms "
                      "replayed as a CUDA graph (its library calls' host time outran the GPU)", notes)
        self.assertIn("resnet18 FX unfused: host-bound: 2.628 / 1.927 ms launched step by step, 1.830 / 1.821 ms "
                      "replayed as a CUDA graph (its library calls' host time outran the GPU)", notes)
        # Without graph times (an older fusion-cli, or a failed capture) the ratio is not measured, not zero.
        del row["fx_fused"]["graph_ms"]
        bench_report.derive(row, 1e12)
        self.assertEqual(row["ratios"]["fused_graph_compile_queued"], [])
        self.assertIn("not measured: resnet18", bench_report.targets([row])[6])

    def test_contraction_has_no_bandwidth_fraction(self):
        row = bench_report.derive({"name": "m", "min_bytes": 1, "has_contraction": True,
                                   "eager": {"ms": [1.0], "kernels": 3}}, 1e12)
        self.assertIsNone(row["bw_fraction"]["eager"])


    def test_one_fusion_cli_run_is_a_round(self):
        doc = run_doc({"kernels": [step("a", 0.6), step("b", 0.6), step("c", 0.6)], "total_ms": 1.8, "stepped_ms": 2.0},
                      {"kernels": [step("fx_g0", 0.5, "16B x 256"), step("mm", 0.4)], "total_ms": 0.9,
                       "graph_ms": 0.85})
        # Each step's path (its layout or algorithm) and time are kept; a step without a path reads as None.
        self.assertEqual(bench_report.fx_round(doc),
                         {"fx_unfused": {"ms": [1.8], "kernels": 3, "stepped_ms": [2.0], "clocks": [None],
                                         "steps": [[{"name": n, "path": None, "ms": 0.6} for n in "abc"]]},
                          "fx_fused": {"ms": [0.9], "kernels": 2, "graph_ms": [0.85], "clocks": [None],
                                       "steps": [[{"name": "fx_g0", "path": "16B x 256", "ms": 0.5},
                                                  {"name": "mm", "path": None, "ms": 0.4}]]}})
        doc["plans"].pop()
        self.assertIn("no 'fused' plan", bench_report.fx_round(doc)["fx_fused"]["error"])
        self.assertEqual(bench_report.plan_steps(doc, "fused"), [])

    def test_a_step_that_ran_another_choice_in_a_later_round_is_noted(self):
        # A merged GEMM whose search picked the same configuration in two rounds, timed 5% apart.
        def gemm(algorithm, search_ms, ms):
            return [{"name": "g:q", "ms": ms,
                     "path": f"cuBLASLt bf16 GEMM; the fastest of 24 configurations by timing: {algorithm} "
                             f"({search_ms:.4f} ms; the heuristic's first: 0.2900 ms)"}]
        fx = {"fx_unfused": {"ms": []}, "fx_fused": {"ms": []}}
        for algorithm, search_ms, ms in (("tile 256x128, 4 stages", 0.2801, 0.2848),
                                         ("tile 256x128, 4 stages", 0.2705, 0.2696)):
            bench_report.merge_fx_round(fx, {"fx_unfused": {"ms": [0.27], "kernels": 3},
                                             "fx_fused": {"ms": [ms], "kernels": 1,
                                                          "steps": [gemm(algorithm, search_ms, ms)]}})
        row = {"name": "qkv_bf16", **fx}
        self.assertEqual(len(row["fx_fused"]["steps"]), 2)
        # The same choice, timed otherwise by the search: nothing to note.
        self.assertEqual(bench_report.changed_choices(row), [])
        row["fx_fused"]["steps"][1] = gemm("tile 128x256, 3 stages", 0.2705, 0.2696)
        self.assertEqual(bench_report.changed_choices(row),
                         ["qkv_bf16 FX fused: step g:q ran another choice in round 2: round 1 0.2848 ms with "
                          "cuBLASLt bf16 GEMM; the fastest of 24 configurations by timing: tile 256x128, 4 stages "
                          "(0.2801 ms; the heuristic's first: 0.2900 ms); round 2 0.2696 ms with cuBLASLt bf16 "
                          "GEMM; the fastest of 24 configurations by timing: tile 128x256, 3 stages (0.2705 ms; the "
                          "heuristic's first: 0.2900 ms)"])
        row["fx_fused"]["steps"].append([])
        self.assertIn("qkv_bf16 FX fused: 1 steps in round 1, 0 in round 3", bench_report.changed_choices(row))
        # The notes carry them, after the host-bound ones.
        row.update(eager={"ms": [0.29]}, compile={"ms": [0.30]})
        self.assertTrue(any("ran another choice" in n for n in bench_report.notes([row])))
        self.assertIn("qkv_bf16 FX fused: 2 step(s) ran another layout or algorithm in a later round than in round 1 "
                      "(bench.md names them)", bench_report.notes([row], each_step=False))

    def test_rounds_keep_every_time_fusion_cli_gave(self):
        fx = {"fx_unfused": {"ms": []}, "fx_fused": {"ms": []}}
        for ms, graph in ((0.988, 0.939), (0.983, 0.941)):
            one = {"fx_unfused": {"ms": [1.8], "kernels": 107, "stepped_ms": [2.0]},
                   "fx_fused": {"ms": [ms], "kernels": 34, "stepped_ms": [1.05], "graph_ms": [graph]}}
            bench_report.merge_fx_round(fx, one)
        self.assertEqual(fx["fx_fused"], {"ms": [0.988, 0.983], "kernels": 34, "stepped_ms": [1.05, 1.05],
                                          "graph_ms": [0.939, 0.941]})
        self.assertNotIn("graph_ms", fx["fx_unfused"])
        bench_report.merge_fx_round(fx, {"fx_unfused": {"error": "fusion-cli exited 1"}, "fx_fused": {"ms": [1.0], "kernels": 34}})
        self.assertEqual(fx["fx_unfused"], {"error": "fusion-cli exited 1"})


class SplitRuns(unittest.TestCase):
    """All the samples take longer than one call on the GPU machine: one bench run per group, merged after."""

    def test_the_two_groups_partition_the_samples(self):
        every = sorted(glob.glob(os.path.join(SAMPLES, "*.json")))
        elementwise = fx_graph.samples_in_group(every, "elementwise")
        contraction = fx_graph.samples_in_group(every, "contraction")
        self.assertEqual(sorted(elementwise + contraction), every)
        self.assertFalse(set(elementwise) & set(contraction))
        names = lambda paths: {os.path.basename(p)[:-5] for p in paths}  # noqa: E731
        self.assertIn("sum_of_squares", names(elementwise))
        self.assertIn("qkv_bf16", names(contraction))
        self.assertIn("gpt2_block_hf", names(contraction))
        self.assertEqual(fx_graph.samples_in_group(every, "all"), every)
        with self.assertRaisesRegex(ValueError, "unknown group 'gemm'"):
            fx_graph.samples_in_group(every, "gemm")

    @staticmethod
    def report(names, copy=3.0, device="H100", torch_version="2.11"):
        rows = []
        for n in names:
            row = {"name": n, "file": f"sample_graphs/{n}.json", "min_bytes": 256 * MIB, "has_contraction": False,
                   "eager": {"ms": [0.5], "kernels": 2}, "compile": {"ms": [0.1], "kernels": 1},
                   "fx_unfused": {"ms": [0.45], "kernels": 2}, "fx_fused": {"ms": [0.1], "kernels": 1}}
            rows.append(bench_report.derive(row, copy * 1e12))
        return {"device": device, "torch": torch_version, "triton": "3.6", "copy_tb_s": copy, "seconds": 10.0,
                "samples": rows}

    def test_merge_keeps_each_row_and_says_where_it_came_from(self):
        a, b = self.report(["softmax", "layernorm"], copy=3.0), self.report(["qkv_bf16"], copy=2.9)
        merged = bench_report.merge([a, b])
        self.assertEqual([r["name"] for r in merged["samples"]], ["softmax", "layernorm", "qkv_bf16"])
        self.assertEqual(merged["seconds"], 20.0)
        self.assertEqual([p["samples"] for p in merged["parts"]], [["softmax", "layernorm"], ["qkv_bf16"]])
        # each row keeps the bandwidth fraction its own run's copy bandwidth gave
        self.assertAlmostEqual(merged["samples"][2]["bw_fraction"]["compile"], 256 * MIB / 0.1e-3 / 2.9e12)
        md = bench_report.markdown(merged)
        self.assertIn("merged from 2 runs", md)
        self.assertIn("2.90 TB/s in run 2 (1 samples: qkv_bf16)", md)
        self.assertIn("met on 3 of 3", md)
        left_out = bench_report.samples_not_in(merged["samples"])
        self.assertIn("gpt2_block_hf", left_out)
        self.assertNotIn("qkv_bf16", left_out)
        self.assertIn("Not in this report: %d of the samples" % len(left_out), md)

    def test_merge_refuses_two_devices_and_a_sample_measured_twice(self):
        with self.assertRaisesRegex(ValueError, "report 2 has device 'H200', report 1 'H100'"):
            bench_report.merge([self.report(["softmax"]), self.report(["qkv_bf16"], device="H200")])
        with self.assertRaisesRegex(ValueError, "sample softmax is in report 1 and report 2"):
            bench_report.merge([self.report(["softmax"]), self.report(["softmax"])])
        with self.assertRaisesRegex(ValueError, "no reports"):
            bench_report.merge([])

    def test_merge_command_writes_both_files_and_names_a_bad_input(self):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for i, names in enumerate((["softmax"], ["qkv_bf16"])):
                paths.append(os.path.join(d, f"r{i}.json"))
                with open(paths[-1], "w", encoding="utf-8") as f:
                    json.dump(self.report(names), f)
            out = os.path.join(d, "merged")
            said = io.StringIO()
            with contextlib.redirect_stdout(said):
                self.assertEqual(bench_report.main(["merge", "--out", out] + paths), 0)
            self.assertIn("2 samples from 2 reports", said.getvalue())
            with open(os.path.join(out, "bench.json"), encoding="utf-8") as f:
                self.assertEqual(len(json.load(f)["samples"]), 2)
            self.assertTrue(os.path.exists(os.path.join(out, "bench.md")))
            with open(paths[1], "w", encoding="utf-8") as f:
                f.write("{not json")
            with contextlib.redirect_stdout(said):
                self.assertEqual(bench_report.main(["merge", "--out", out] + paths), 2)
            self.assertIn("r1.json", said.getvalue())


class Clocks(unittest.TestCase):
    """Both sides' SM clocks next to their times: the power-limited GEMMs are only comparable at like clocks."""

    def test_summary_leaves_idle_samples_out_of_the_clocks(self):
        self.assertIsNone(gpu_clocks.summarize([]))
        s = gpu_clocks.summarize([(345, 0x1), (1980, 0), (1740, 0x4), (1755, 0x4 | 0x20)])
        self.assertEqual(s, {"samples": 4, "busy_samples": 3, "sm_mhz_median": 1755, "sm_mhz_min": 1740,
                             "sm_mhz_max": 1980, "held_back_by": ["the power cap", "thermal slowdown (software)"]})
        idle = gpu_clocks.summarize([(345, 0x1)])
        self.assertEqual((idle["busy_samples"], idle["sm_mhz_median"]), (0, None))
        self.assertEqual(gpu_clocks.median_of([s, None, idle, {"sm_mhz_median": 1980}]), (1755 + 1980) / 2)

    def test_without_nvml_a_watch_reads_nothing_and_says_why(self):
        monitor = gpu_clocks.Monitor()
        if monitor.available:
            self.skipTest("NVML reads a GPU here")
        self.assertIn("NVML", monitor.why_not)
        self.assertIsNone(monitor.sample())
        with gpu_clocks.Watch(monitor) as w:
            pass
        self.assertIsNone(w.summary)
        with gpu_clocks.Watch(None) as w:  # the harness before main() opened a monitor
            pass
        self.assertIsNone(w.summary)

    def test_fusion_cli_clocks_join_the_rounds_and_the_notes(self):
        def doc(mhz):
            return run_doc({"kernels": [step(n, 0.09) for n in "abc"], "total_ms": 0.27},
                           {"kernels": [step("f", 0.26)], "total_ms": 0.26},
                           {"repeat": 100, "warmup": 10, "cold_l2": True,
                            "gpu_clocks": {"samples": 40, "busy_samples": 39, "sm_mhz_median": mhz,
                                           "sm_mhz_min": 1740, "sm_mhz_max": 1980, "held_back_by": [],
                                           "summary": "...", "note": ""}})
        fx = {"fx_unfused": {"ms": []}, "fx_fused": {"ms": []}}
        for mhz in (1980, 1965):
            bench_report.merge_fx_round(fx, bench_report.fx_round(doc(mhz)))
        self.assertEqual([c["sm_mhz_median"] for c in fx["fx_fused"]["clocks"]], [1980, 1965])
        idle = doc(None)
        idle["timing"]["gpu_clocks"].update(samples=0, busy_samples=0)
        self.assertIsNone(bench_report.read_fx_clocks(idle))
        self.assertIsNone(bench_report.read_fx_clocks(run_doc({"kernels": [], "total_ms": 0.1},
                                                              {"kernels": [], "total_ms": 0.1})))
        compile_clocks = [gpu_clocks.summarize([(1740, 0x4), (1755, 0x4)]), None]
        row = {"name": "qkv_bf16", "has_contraction": True, "min_bytes": 136 * MIB,
               "eager": {"ms": [0.28, 0.28], "kernels": 3},
               "compile": {"ms": [0.29, 0.29], "kernels": 3, "clocks": compile_clocks,
                           "queued_ms": [0.276, 0.276], "queued_clocks": [None, None]}}
        row.update(fx)
        self.assertEqual(bench_report.clock_notes(row),
                         ["qkv_bf16 SM clock, median MHz per round: torch.compile 1755 / n/a (the power cap); "
                          "FX (both plans) 1980 / 1965"])
        # a memory-bound sample whose versions ran at like clocks needs no note; one that did not gets it
        row["has_contraction"] = False
        row["compile"]["clocks"] = [gpu_clocks.summarize([(1980, 0)])] * 2
        self.assertEqual(bench_report.clock_notes(row), [])
        row["compile"]["clocks"] = [gpu_clocks.summarize([(1830, 0x4)])] * 2
        self.assertEqual(len(bench_report.clock_notes(row)), 1)
        self.assertEqual(bench_report.clock_notes({"name": "x", "eager": {"ms": [1.0]}}), [])


class QueuePlan(unittest.TestCase):
    """bench.queued_ms: the GPU must find every run of a stretch queued, and rest no more than it must."""

    def test_a_stretch_fits_the_launch_queue(self):
        self.assertEqual(queue_plan.stretch(3, 100), 512 // 6)  # swiglu's torch.compile: 85 runs per spin
        self.assertEqual(queue_plan.stretch(17, 100), 25)  # gpt2_block's: 20 launches a run
        self.assertEqual(queue_plan.stretch(1, 100), 100)  # never more than the runs asked for
        self.assertEqual(queue_plan.stretch(600, 100), 1)  # never none
        self.assertEqual(queue_plan.stretch(None, 100), 512 // 11)  # kernels unknown: eight assumed

    def test_queued_runs_last_as_long_as_do_bench_times(self):
        self.assertEqual(queue_plan.runs_for(100, 0.66e-3), 151)  # do_bench: int(100 / 0.66)
        self.assertEqual(queue_plan.runs_for(100, 0.067e-3), 1492)
        self.assertEqual(queue_plan.runs_for(100, 1e-6), queue_plan.MAX_RUNS)
        self.assertEqual(queue_plan.runs_for(100, 0.0), queue_plan.MAX_RUNS)
        self.assertEqual(queue_plan.runs_for(100, 0.5), queue_plan.MIN_RUNS)  # a run of 500 ms: still ten

    def test_a_gpu_bound_stretch_spins_for_one_run_of_the_host(self):
        # 85 GEMM runs of 0.85 ms enqueued at 60 us each: the host stays ahead, one run's host time suffices.
        self.assertAlmostEqual(queue_plan.spin_seconds(60e-6, 850e-6, 85), 2 * 60e-6 + 50e-6)
        rest = queue_plan.spin_seconds(60e-6, 850e-6, 85) / (85 * 850e-6)
        self.assertLess(rest, 0.01)  # the GPU rests under 1% of the stretch (a spin per run: 20%)

    def test_a_host_bound_stretch_spins_until_the_host_has_enqueued_it(self):
        host_s, gpu_s, runs = 150e-6, 80e-6, 64
        spin = queue_plan.spin_seconds(host_s, gpu_s, runs)
        for i in range(runs):  # the GPU reaches run i after the host has enqueued it
            self.assertGreaterEqual(spin + i * gpu_s, (i + 1) * host_s)


class Pairs(unittest.TestCase):
    """bench/python/pairs.py: the alternating order and the statistics of paired.py."""

    def test_the_sides_alternate_which_goes_first(self):
        self.assertEqual([pairs.pair_order(i)[0] for i in range(4)], ["compile", "fx", "compile", "fx"])
        self.assertEqual(sorted(pairs.pair_order(1)), ["compile", "fx"])

    def test_each_pair_draws_its_own_placement_and_a_run_draws_the_same_again(self):
        seeds = [pairs.placement("relu_mul_add", i) for i in range(15)]
        self.assertEqual(seeds, [pairs.placement("relu_mul_add", i) for i in range(15)])  # repeatable
        self.assertEqual(len(set(seeds)), 15)  # a new one for every pair
        self.assertTrue(all(1 <= s < 2**31 for s in seeds))  # fusion-cli's --placement: 0 would mean packed
        self.assertNotEqual(seeds[0], pairs.placement("sin_cos", 0))
        # PyTorch's side: a gap of 0-15 MiB before each input, drawn from the same seed
        gaps = [pairs.torch_gaps_mib(s, 3) for s in seeds]
        self.assertEqual(gaps[0], pairs.torch_gaps_mib(seeds[0], 3))
        self.assertTrue(all(0 <= g < pairs.PLACEMENT_GAP_MIB for gs in gaps for g in gs))
        self.assertGreater(len({tuple(g) for g in gaps}), 10)
        # ... laid out in one allocation as fusion-cli lays out its arena: a gap, then the input, 256-byte aligned
        offsets, total = pairs.placement_offsets(seeds[0], [1000, 256 * MIB, 4])
        g = pairs.torch_gaps_mib(seeds[0], 3)
        self.assertEqual(offsets, [g[0] * MIB, (g[0] + g[1]) * MIB + 1024, (g[0] + g[1] + g[2] + 256) * MIB + 1024])
        self.assertEqual(total, offsets[2] + 256)
        moved = {pairs.placement_offsets(s, [256 * MIB] * 3)[0][0] for s in seeds}
        self.assertGreater(len(moved), 5)  # the first input's place changes from pair to pair

    def test_the_median_interval_is_the_sign_test_one(self):
        # n = 15 at 95%: x_(4) and x_(12), coverage 1 - 2 P(X <= 3) = 1 - 2 * 576 / 32768.
        low, high, coverage = pairs.median_interval(list(range(15, 0, -1)))
        self.assertEqual((low, high), (4, 12))
        self.assertAlmostEqual(coverage, 1 - 2 * 576 / 32768)
        self.assertGreaterEqual(coverage, 0.95)
        # n = 6: only the extremes (coverage 1 - 2/64); n = 5 cannot reach 95%.
        self.assertEqual(pairs.median_interval([3, 1, 2, 6, 5, 4])[:2], (1, 6))
        self.assertIsNone(pairs.median_interval([1, 2, 3, 4, 5]))
        self.assertIsNone(pairs.median_interval([]))

    def test_the_verdict_reads_the_interval(self):
        self.assertEqual(pairs.verdict(0.95, 0.99), "fused faster")
        self.assertEqual(pairs.verdict(1.01, 1.05), "torch.compile faster")
        self.assertEqual(pairs.verdict(0.98, 1.02), "no difference shown")
        self.assertEqual(pairs.verdict(None, None), "too few pairs for an interval")

    def test_a_summary_of_pairs(self):
        timed = [{"compile_ms": 1.0, "fused_ms": f, "unfused_ms": 1.5, "compile_mhz": 1980, "fx_mhz": 1965,
                  "first": pairs.pair_order(i)[0]} for i, f in enumerate([0.90, 0.92, 0.95, 0.97, 0.99, 1.01, 0.93])]
        timed.append({"compile_ms": None, "fused_ms": 0.9})  # a failed timing is no pair
        s = pairs.summarize(timed)
        self.assertEqual(s["pairs"], 7)
        self.assertAlmostEqual(s["ratio_median"], 0.95)
        self.assertEqual(s["fused_faster_in"], 6)
        self.assertEqual(s["interval"], [0.90, 1.01])  # n = 7: x_(1) and x_(7), coverage 1 - 2/128
        self.assertEqual(s["verdict"], "no difference shown")
        self.assertAlmostEqual(s["fused_spread"], 1.01 / 0.90 - 1)
        self.assertEqual(s["compile_spread"], 0.0)
        self.assertEqual((s["compile_mhz_median"], s["fx_mhz_median"]), (1980, 1965))
        table = pairs.markdown([{"name": "qkv_bf16", "kernels": {"compile": 3, "fused": 1}, "summary": s},
                                {"name": "bad", "error": "fusion-cli exited 2: x"}])
        self.assertIn("| qkv_bf16 | 7 | 1.0000 (3) | 0.9500 (1) | 0.9500 | 0.9000 - 1.0100 | 98.4% | 6 of 7 "
                      "| no difference shown | 0.0% / 12.2% | 1980 / 1965 |", table)
        self.assertIn("| bad | error: fusion-cli exited 2: x |", table)
        self.assertEqual(len({line.count("|") for line in table.splitlines()}), 1)  # every row has every column

    def test_reports_of_one_device_merge_and_others_do_not(self):
        head = {"device": "NVIDIA H200", "torch": "2.11.0", "triton": "3.6.0", "timing": "pairs", "confidence": 0.95}
        a = dict(head, samples=[{"name": "a", "error": "x"}], seconds=10.0)
        b = dict(head, samples=[{"name": "b", "error": "y"}], seconds=5.5)
        merged = pairs.merge([a, b])
        self.assertEqual([s["name"] for s in merged["samples"]], ["a", "b"])
        self.assertEqual(merged["seconds"], 15.5)
        with self.assertRaisesRegex(ValueError, "reports differ in device"):
            pairs.merge([a, dict(b, device="NVIDIA H100 80GB HBM3")])
        with tempfile.TemporaryDirectory() as tmp:
            for name, r in (("a.json", a), ("b.json", b)):
                with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                    json.dump(r, f)
            with contextlib.redirect_stdout(io.StringIO()):
                pairs.main(["merge", "--out", os.path.join(tmp, "out"), os.path.join(tmp, "a.json"),
                            os.path.join(tmp, "b.json")])
            with open(os.path.join(tmp, "out", "paired.md"), encoding="utf-8") as f:
                text = f.read()
            self.assertIn("Paired timings on NVIDIA H200 (torch 2.11.0, triton 3.6.0); pairs.", text)
            self.assertIn("| b | error: y |", text)


if __name__ == "__main__":
    unittest.main()
