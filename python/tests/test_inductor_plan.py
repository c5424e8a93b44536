#!/usr/bin/env python3
"""Inductor captures -> plans (no torch): the crafted capture checks each rule of the conversion; every recorded
capture under fixtures/recorded/ (made by python/tools/record_fixtures.sh with a real torch, which each names)
must convert into a valid plan that the C++ loader reads (when fusion-cli is built)."""
import copy
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from fusion_explorer import graph_format, inductor, inductor_plan  # noqa: E402
from test_aten import find_cli  # noqa: E402

FIXTURES = os.path.join(HERE, "fixtures")


def load(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f)


class ConversionTest(unittest.TestCase):
    def setUp(self):
        self.capture = load("crafted_capture_mlp.json")
        self.plan = inductor_plan.to_plan(self.capture)
        self.groups = {g["id"]: g for g in self.plan["fusion"]["groups"]}

    def test_the_plan_is_a_valid_partition_marked_inductor(self):
        graph_format.read_plan(self.plan)
        self.assertEqual(self.plan["fusion"]["source"], "inductor")
        names = [n for g in self.plan["fusion"]["groups"] for n in g["nodes"]]
        self.assertEqual(sorted(names), sorted(n["name"] for n in self.plan["nodes"]))

    def test_a_linear_splits_into_the_library_mm_and_the_fused_bias_add(self):
        self.assertEqual(self.groups["k1"]["nodes"], ["linear/matmul"])
        self.assertTrue(self.groups["k1"]["library"])
        self.assertEqual(self.groups["k1"]["kernel"], "extern_kernels.mm")
        self.assertEqual(self.groups["k2"]["nodes"], ["linear", "gelu"])
        self.assertFalse(self.groups["k2"]["library"])

    def test_views_inductor_ran_no_kernel_for_are_their_own_group_without_a_kernel(self):
        self.assertEqual(self.groups["k5"]["nodes"], ["view"])
        self.assertIsNone(self.groups["k5"]["kernel"])
        self.assertEqual(self.plan["fusion"]["kernels"], 5)

    def test_reasons_name_the_graph_nodes_on_each_side_once(self):
        reasons = self.plan["fusion"]["pair_reasons"]
        pairs = [(r["a"], r["b"], r["code"]) for r in reasons]
        self.assertEqual(pairs, [(["layer_norm"], ["linear/matmul"], "OPAQUE_OP"),
                                 (["linear/matmul"], ["linear", "gelu"], "OPAQUE_OP"),
                                 (["layer_norm"], ["linear_1", "add"], "NOT_RELATED")])
        self.assertIn("cannot fuse op1 with op2_op3: node1 is extern or nop", reasons[1]["message"])
        notes = " ".join(self.plan["fusion"]["notes"])
        self.assertIn("1 reason(s) name scheduler nodes with no counterpart", notes)
        self.assertIn("1 reason(s) were about pairs Inductor fused later", notes)

    def test_a_node_two_generated_kernels_compute_goes_to_the_last_and_names_the_first(self):
        cap = copy.deepcopy(self.capture)
        run = cap["schedulers"][0]
        # A split reduction: a first pass (op8) and the final kernel (op0) both come from layer_norm.
        run["kernels"].insert(0, {"name": "op8", "kind": "single", "kernel": "op8", "ops": ["op8"],
                                  "origins": ["layer_norm"], "device": "cuda:0"})
        plan = inductor_plan.to_plan(cap)
        ln = next(g for g in plan["fusion"]["groups"] if "layer_norm" in g["nodes"])
        self.assertEqual((ln["id"], ln["also_in"]), ("k1", ["k0"]))
        self.assertEqual(plan["fusion"]["kernels"], 6)
        self.assertIn("compute only parts of nodes", " ".join(plan["fusion"]["notes"]))

    def test_reason_codes(self):
        self.assertEqual(inductor_plan.reason_code("will create a cycle"), "CYCLE")
        self.assertEqual(inductor_plan.reason_code("numel/rnumel mismatch (reduce) (8192, 1), (256, 32)"),
                         "SHAPE_MISMATCH")
        self.assertEqual(inductor_plan.reason_code("something new"), "INDUCTOR_OTHER")

    def test_the_capture_validates_against_its_published_schema(self):
        from fusion_explorer import schema
        self.assertTrue(schema.check(self.capture, "inductor_capture"))
        bad = copy.deepcopy(self.capture)
        bad["schedulers"][0]["kernels"][0]["kind"] = "magic"
        with self.assertRaisesRegex(inductor_plan.CaptureError, "/schedulers/0/kernels/0/kind"):
            inductor_plan.to_plan(bad)

    def test_a_capture_of_another_format_is_refused(self):
        with self.assertRaisesRegex(inductor_plan.CaptureError, "/format"):
            inductor_plan.to_plan({"format": "x"})
        cap = dict(self.capture)
        del cap["schedulers"]
        with self.assertRaisesRegex(inductor_plan.CaptureError, "/schedulers"):
            inductor_plan.to_plan(cap)

    def test_the_command_converts_a_capture_without_torch(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "plan.json")
            code = inductor.main(["--from-capture", os.path.join(FIXTURES, "crafted_capture_mlp.json"), "-o", out,
                                  "--graph", os.path.join(d, "g.json")])
            self.assertEqual(code, 0)
            self.assertEqual(graph_format.read_plan(out)["fusion"]["groups"], self.plan["fusion"]["groups"])
            self.assertEqual(graph_format.read_graph(os.path.join(d, "g.json"))["name"], "mlp")


class OriginResolverTest(unittest.TestCase):
    """The provenance walk, on stand-ins shaped like torch.fx.traceback.NodeSource (no torch here)."""

    class Source:
        def __init__(self, name, graph_id, parents=()):
            self.name, self.graph_id, self.from_node = name, graph_id, list(parents)

    class FxNode:
        def __init__(self, sources):
            self.meta = {"from_node": sources}

    def test_matches_by_graph_identity_before_names(self):
        s = self.Source
        # post-grad "relu" <- pre-grad "relu" (graph 2) <- exported "relu_1" (graph 1, the one compiled)
        node = self.FxNode([s("relu", 2, [s("relu_1", 1)])])
        resolve = inductor.OriginResolver(["relu", "relu_1"], graph_id=1)
        self.assertEqual(resolve(node), ["relu_1"])
        self.assertEqual((resolve.by_graph_id, resolve.by_name), (1, 0))

    def test_without_the_graphs_identity_the_shallowest_exported_name_wins(self):
        s = self.Source
        # the compiled graph was a copy (graph 3): its "linear" is nearer than an export-internal "relu"
        node = self.FxNode([s("addmm", 2, [s("linear", 3, [s("relu", 4)])])])
        resolve = inductor.OriginResolver(["linear", "relu"], graph_id=1)
        self.assertEqual(resolve(node), ["linear"])
        self.assertEqual((resolve.by_graph_id, resolve.by_name), (0, 1))

    def test_older_tuples_match_by_name(self):
        resolve = inductor.OriginResolver(["linear"], graph_id=1)
        self.assertEqual(resolve(self.FxNode([("linear", "aten.linear.default")])), ["linear"])
        self.assertEqual(resolve(self.FxNode([])), [])
        self.assertEqual(resolve.unmatched, 1)


class SchedulerRecordTest(unittest.TestCase):
    """record_scheduler and the reason log on duck-typed stand-ins for Inductor's scheduler nodes (no torch);
    the live tests run them on the real scheduler."""

    class FakeSched:  # stands in for the torch._inductor.scheduler module
        class FusedSchedulerNode:
            pass

        class NopKernelSchedulerNode:
            pass

        class ForeachKernelSchedulerNode:
            pass

    class Sub:
        def __init__(self, name, origins, extern=False, kernel=None):
            self.name, self.extern = name, extern
            self.node = type("IR", (), {"origins": origins, "python_kernel_name": kernel})()

        def get_name(self):
            return self.name

        def get_outputs(self):
            return [type("Buf", (), {"get_name": lambda s, n=self.name.replace("op", "buf"): n})()]

        def get_nodes(self):
            return [self]

        def is_extern(self):
            return self.extern

        def is_template(self):
            return False

        def get_device(self):
            return "cuda:0"

    def test_kernels_kinds_library_names_and_name_table(self):
        S = self.Sub
        fused_cls = self.FakeSched.FusedSchedulerNode

        class Fused(fused_cls):
            def __init__(self, subs):
                self.subs = subs

            def get_name(self):
                return "_".join(s.get_name() for s in self.subs)

            def get_nodes(self):
                return self.subs

            def is_extern(self):
                return False

            def is_template(self):
                return False

            def get_device(self):
                return "cuda:0"

        mm = S("op1", ["fx_linear"], extern=True, kernel="extern_kernels.mm")
        fused = Fused([S("op2", ["fx_linear"]), S("op3", ["fx_gelu"])])
        scheduler = type("Scheduler", (), {"nodes": [mm, fused]})()
        resolve = {"fx_linear": ["linear"], "fx_gelu": ["gelu"]}.get
        run = inductor.record_scheduler(scheduler, self.FakeSched, resolve)
        self.assertEqual([(k["name"], k["kind"], k["kernel"]) for k in run["kernels"]],
                         [("op1", "extern", "extern_kernels.mm"), ("op2_op3", "fused", "op2_op3")])
        self.assertEqual(run["kernels"][1]["origins"], ["linear", "gelu"])
        self.assertEqual(run["names"]["buf3"], ["gelu"])

    def test_plain_text_cannot_fuse_records_are_parsed(self):
        import logging
        pending = [[]]
        handler = inductor._ReasonLog(pending)
        record = logging.LogRecord("x", logging.DEBUG, "f", 1, "cannot fuse %s with %s: %s", ("op1", "op2_op3",
                                   "template epilogue not satisfied"), None)
        handler.emit(record)
        handler.emit(logging.LogRecord("x", logging.DEBUG, "f", 1, "found 3 possible fusions", (), None))
        self.assertEqual(pending[0], [{"node1": "op1", "node2": "op2_op3",
                                               "reason": "template epilogue not satisfied"}])


def recorded():
    """The committed recordings, or those FX_RECORDED_DIR names (record_fixtures.sh checks fresh ones)."""
    directory = os.environ.get("FX_RECORDED_DIR", os.path.join(FIXTURES, "recorded"))
    return sorted(glob.glob(os.path.join(directory, "*.capture.json")))


class RecordedTest(unittest.TestCase):
    def test_recorded_captures_convert_and_load(self):
        if not recorded():
            self.skipTest("no recorded captures yet (python/tools/record_fixtures.sh makes them)")
        cli = find_cli()
        for path in recorded():
            with self.subTest(path=os.path.basename(path)):
                cap = graph_format.load_json(path)
                self.assertIn("torch", cap)
                plan = graph_format.read_plan(inductor_plan.to_plan(cap))
                self.assertGreater(plan["fusion"]["kernels"], 0)
                if cli:
                    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                        json.dump(plan, f)
                    try:
                        proc = subprocess.run([cli, "validate", f.name], capture_output=True, text=True)
                    finally:
                        os.unlink(f.name)
                    self.assertEqual(proc.returncode, 0, proc.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=1)
