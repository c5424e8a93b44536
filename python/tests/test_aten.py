#!/usr/bin/env python3
"""Unit tests of the exporter's pure-Python parts (no torch): ATen mapping, fallbacks, sources, repair.

When fusion-cli is built (FX_CLI or build*/app/cli/fusion-cli), the graphs written here are also validated
by it, so the mapping is checked against the C++ op registry."""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from fusion_explorer import aten, export, repair  # noqa: E402
from fusion_explorer.graph_format import GraphWriter, Ref  # noqa: E402


def find_cli():
    if os.environ.get("FX_CLI"):
        return os.environ["FX_CLI"]
    found = sorted(glob.glob(os.path.join(ROOT, "build*", "app", "cli", "fusion-cli")), key=os.path.getmtime)
    return found[-1] if found else None


def meta(ins, out):
    return {"in": ins, "out": out}


class MappingTest(unittest.TestCase):
    def setUp(self):
        self.w = GraphWriter("t", "test")

    def test_linear_is_a_transposed_matmul_plus_bias(self):
        x = self.w.add_input("x", [8, 16, 64], "f32")
        wt = self.w.add_input("w", [32, 64], "f32", "weight")
        b = self.w.add_input("b", [32], "f32", "weight")
        out, reason = aten.map_call(self.w, "fc", "linear", [x, wt, b], {},
                                  meta([([8, 16, 64], "f32"), ([32, 64], "f32"), ([32], "f32")], ([8, 16, 32], "f32")))
        self.assertIsNone(reason)
        self.assertEqual(out, Ref("fc"))
        mm, add = self.w.nodes
        self.assertEqual((mm["op"], mm["attrs"]), ("matmul", {"transpose_b": True}))
        self.assertEqual((add["op"], add["inputs"]), ("add", ["fc/matmul", "b"]))

    def test_batch_norm_reorders_to_mean_var_gamma_beta(self):
        refs = [self.w.add_input(n, s, "f32") for n, s in
                [("x", [2, 4, 8, 8]), ("g", [4]), ("be", [4]), ("m", [4]), ("v", [4])]]
        out, reason = aten.map_call(self.w, "bn", "_native_batch_norm_legit_no_training", refs + [0.1, 1e-5], {},
                                  meta([], [([2, 4, 8, 8], "f32"), ([0], "f32"), ([0], "f32")]))
        self.assertIsNone(reason)
        self.assertEqual(out[0], Ref("bn"))
        self.assertEqual(self.w.nodes[0]["inputs"], ["x", "m", "v", "g", "be"])
        self.assertEqual(self.w.nodes[0]["attrs"], {"eps": 1e-5})

    def test_conv2d_and_convolution_read_groups_from_their_own_positions(self):
        x = self.w.add_input("x", [1, 4, 8, 8], "f32")
        k = self.w.add_input("k", [4, 2, 3, 3], "f32", "weight")
        m = meta([([1, 4, 8, 8], "f32"), ([4, 2, 3, 3], "f32")], ([1, 4, 8, 8], "f32"))
        aten.map_call(self.w, "c1", "conv2d", [x, k, None, [1, 1], [1, 1], [1, 1], 2], {}, m)
        aten.map_call(self.w, "c2", "convolution", [x, k, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 2], {}, m)
        self.assertEqual([n["attrs"]["groups"] for n in self.w.nodes], [2, 2])
        _, reason = aten.map_call(self.w, "c3", "convolution", [x, k, None, [1], [1], [1], True, [0, 0], 2], {}, m)
        self.assertEqual(reason, "transposed convolution")
        self.assertEqual(self.w.nodes[-1]["op"], "custom")

    def test_unmapped_ops_become_custom_with_the_torch_shape(self):
        x = self.w.add_input("x", [2, 3, 32, 32], "f32")
        out, reason = aten.map_call(self.w, "pool", "avg_pool2d", [x, [2, 2]], {},
                                  meta([([2, 3, 32, 32], "f32")], ([2, 3, 16, 16], "f32")))
        self.assertEqual(reason, "no mapping")
        self.assertEqual(self.w.nodes[-1], {"name": "pool", "op": "custom", "inputs": ["x"],
                                            "attrs": {"label": "avg_pool2d"}, "shape": [2, 3, 16, 16], "dtype": "f32"})

    def test_max_pool2d_maps_with_the_kernel_as_default_stride(self):
        x = self.w.add_input("x", [2, 3, 32, 32], "f32")
        m = meta([([2, 3, 32, 32], "f32")], ([2, 3, 16, 16], "f32"))
        _, reason = aten.map_call(self.w, "pool", "max_pool2d", [x, [2, 2]], {}, m)
        self.assertIsNone(reason)
        self.assertEqual(self.w.nodes[-1]["attrs"], {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0],
                                                     "dilation": [1, 1]})
        _, reason = aten.map_call(self.w, "stem", "max_pool2d", [x, [3, 3], [2, 2], [1, 1]], {}, m)
        self.assertIsNone(reason)
        self.assertEqual(self.w.nodes[-1]["attrs"]["padding"], [1, 1])
        _, reason = aten.map_call(self.w, "up", "max_pool2d", [x, [2, 2], [2, 2], [0, 0], [1, 1], True], {}, m)
        self.assertIn("ceil_mode", reason)
        self.assertEqual(self.w.nodes[-1]["op"], "custom")

    def test_split_becomes_slices_and_scalar_full_a_literal(self):
        qkv = self.w.add_input("qkv", [8, 1024, 2304], "f32")
        parts, reason = aten.map_call(self.w, "split", "split", [qkv, 768, 2], {},
                                    meta([([8, 1024, 2304], "f32")], [([8, 1024, 768], "f32")] * 3))
        self.assertIsNone(reason)
        self.assertEqual([(n["attrs"]["start"], n["attrs"]["end"]) for n in self.w.nodes], [(0, 768), (768, 1536),
                                                                                           (1536, 2304)])
        scale, reason = aten.map_call(self.w, "full", "full", [[], 8.0], {"dtype": "f32"}, meta([], ([], "f32")))
        self.assertEqual((scale, reason), (8.0, None))
        out, _ = aten.map_call(self.w, "div", "div", [parts[0], scale], {},
                             meta([([8, 1024, 768], "f32")], ([8, 1024, 768], "f32")))
        self.assertEqual(self.w.nodes[-1]["inputs"], ["split_0", 8.0])

    def test_views_reshape_to_the_output_shape_and_no_ops_alias(self):
        x = self.w.add_input("x", [8, 1024, 768], "f32")
        out, _ = aten.map_call(self.w, "v", "view", [x, [8, 1024, 12, 64]], {},
                             meta([([8, 1024, 768], "f32")], ([8, 1024, 12, 64], "f32")))
        self.assertEqual(self.w.nodes[-1]["attrs"], {"shape": [8, 1024, 12, 64]})
        same, _ = aten.map_call(self.w, "d", "dropout", [out, 0.1, False], {},
                              meta([([8, 1024, 12, 64], "f32")], ([8, 1024, 12, 64], "f32")))
        self.assertEqual(same, out)
        t, _ = aten.map_call(self.w, "t", "transpose", [out, -1, -2], {},
                           meta([([8, 1024, 12, 64], "f32")], ([8, 1024, 64, 12], "f32")))
        self.assertEqual(self.w.nodes[-1]["attrs"], {"perm": [0, 1, 3, 2]})

    def test_names_stay_unique(self):
        self.w.add_input("x", [4], "f32")
        r = self.w.add_node("x", "relu", [Ref("x")], None, [4], "f32")
        self.assertEqual(r.name, "x#2")

    def test_aten_name(self):
        self.assertEqual(aten.aten_name("aten.conv2d.default"), "conv2d")
        self.assertEqual(aten.aten_name("<built-in function getitem>"), "<built-in function getitem>")

    def test_rejected_nodes_are_parsed_from_diagnostics(self):
        text = "g.json: error: /nodes/3/inputs/1: shape mismatch\ng.json: error: /nodes/10/shape: stated shape"
        self.assertEqual(repair.rejected_nodes(text), [3, 10])


class AdditionsTest(unittest.TestCase):
    """The ops added with the package (rms_norm, sort, max_pool2d_with_indices) and what every node carries."""

    def setUp(self):
        self.w = GraphWriter("t", "test")

    def test_rms_norm_maps_with_torchs_default_eps(self):
        x = self.w.add_input("x", [2, 8, 64], "f32")
        g = self.w.add_input("g", [64], "f32", "weight")
        m = meta([([2, 8, 64], "f32"), ([64], "f32")], ([2, 8, 64], "f32"))
        _, reason = aten.map_call(self.w, "rms", "rms_norm", [x, [64], g], {}, m)
        self.assertIsNone(reason)
        self.assertEqual((self.w.nodes[-1]["op"], self.w.nodes[-1]["attrs"]), ("rmsnorm", {"eps": 2.0 ** -23}))
        _, reason = aten.map_call(self.w, "rms2", "rms_norm", [x, [8, 64], g, 1e-5], {}, m)
        self.assertIn("more than the last axis", reason)
        self.assertEqual(self.w.nodes[-1]["op"], "custom")

    def test_sort_keeps_values_and_drops_indices(self):
        x = self.w.add_input("x", [4, 16], "f32")
        out, reason = aten.map_call(self.w, "s", "sort", [x, 1, True], {},
                                    meta([([4, 16], "f32")], [([4, 16], "f32"), ([4, 16], "i64")]))
        self.assertIsNone(reason)
        self.assertEqual(out, [Ref("s"), None])
        self.assertEqual(self.w.nodes[-1]["attrs"], {"axis": 1, "descending": True})

    def test_max_pool2d_with_indices_is_max_pool2d(self):
        x = self.w.add_input("x", [1, 3, 8, 8], "f32")
        out, reason = aten.map_call(self.w, "p", "max_pool2d_with_indices", [x, [2, 2]], {},
                                    meta([([1, 3, 8, 8], "f32")], [([1, 3, 4, 4], "f32"), ([1, 3, 4, 4], "i64")]))
        self.assertIsNone(reason)
        self.assertEqual((out[0], self.w.nodes[-1]["op"]), (Ref("p"), "max_pool2d"))

    def test_nodes_carry_source_and_origin_and_a_failed_mapping_leaves_neither(self):
        x = self.w.add_input("x", [8, 16], "f32")
        wt = self.w.add_input("w", [32, 16], "f32", "weight")
        b = self.w.add_input("b", [32], "f32", "weight")
        self.w.origin, self.w.source = "linear", "model.py:12"
        aten.map_call(self.w, "linear", "linear", [x, wt, b], {},
                      meta([([8, 16], "f32"), ([32, 16], "f32"), ([32], "f32")], ([8, 32], "f32")))
        self.assertEqual(self.w.origins["linear"], ["linear/matmul", "linear"])
        self.assertEqual({n["source"] for n in self.w.nodes}, {"model.py:12"})
        self.w.origin, self.w.source = "cv", "model.py:13"
        _, reason = aten.map_call(self.w, "cv", "convolution", [x, wt, None, [1], [1], [1], True, [0], 1], {},
                                  meta([([8, 16], "f32"), ([32, 16], "f32")], ([8, 32], "f32")))
        self.assertIsNotNone(reason)
        self.assertEqual(self.w.origins["cv"], ["cv"])  # the custom node, under its own name
        self.assertEqual(self.w.nodes[-1]["source"], "model.py:13")

    def test_source_location_skips_torchs_own_frames(self):
        trace = ('  File "/home/u/proj/model.py", line 40, in forward\n    h = self.up(x)\n'
                 '  File "/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py", line 125, in forward\n'
                 '    return F.linear(input, self.weight, self.bias)\n')
        torch_dir = "/venv/lib/python3.12/site-packages/torch/"
        self.assertEqual(export.source_location(trace, (torch_dir,)), "/home/u/proj/model.py:40")
        self.assertEqual(export.source_location(trace, ()), "torch/nn/modules/linear.py:125")
        self.assertIsNone(export.source_location(None))

    def test_input_specs_parse_and_bad_ones_say_the_form(self):
        self.assertEqual(export.parse_input_spec("x=f32[8,1024,768]"), ("x", "f32", [8, 1024, 768]))
        self.assertEqual(export.parse_input_spec("mask=bool[]"), ("mask", "bool", []))
        with self.assertRaisesRegex(export.ExportError, "NAME=DTYPE"):
            export.parse_input_spec("x=float[8]")

    def test_a_factory_spec_without_a_colon_is_refused(self):
        with self.assertRaisesRegex(export.ExportError, "MODULE:FUNCTION"):
            export.load_factory("mypkg.models")


class RepairTest(unittest.TestCase):
    def graph(self):
        w = GraphWriter("repair", "a node whose stated shape the registry disagrees with")
        x = w.add_input("x", [4, 8], "f32")
        bad = w.add_node("bad", "sum", [x], {"axis": 1, "keepdim": False}, [4, 1], "f32")  # really [4]
        w.add_node("y", "relu", [bad], None, [4, 1], "f32")
        w.outputs.append("y")
        return w.to_json()

    def test_repair_with_a_fake_validator_replaces_the_named_node(self):
        g = self.graph()
        calls = []

        def validate(graph):
            calls.append(1)
            return "" if graph["nodes"][0]["op"] == "custom" else "e: /nodes/0/shape: stated shape differs"
        self.assertEqual(repair.repair(g, validate), [("bad", "sum")])
        self.assertEqual(g["nodes"][0]["attrs"], {"label": "sum (rejected)"})
        self.assertEqual(len(calls), 2)

    @unittest.skipUnless(find_cli(), "fusion-cli is not built")
    def test_repair_with_fusion_cli(self):
        g = self.graph()
        replaced = repair.repair(g, repair.cli_validator(find_cli()))
        self.assertEqual(replaced, [("bad", "sum")])
        self.assertEqual(repair.cli_validator(find_cli())(g), "")

    @unittest.skipUnless(find_cli(), "fusion-cli is not built")
    def test_written_mappings_validate(self):
        w = GraphWriter("mapped", "linear, layer_norm, softmax and split through the C++ registry")
        x = w.add_input("x", [2, 16, 64], "f32")
        wt = w.add_input("w", [192, 64], "f32", "weight")
        b = w.add_input("b", [192], "f32", "weight")
        g_, be = w.add_input("g", [64], "f32", "weight"), w.add_input("be", [64], "f32", "weight")
        ln, _ = aten.map_call(w, "ln", "layer_norm", [x, [64], g_, be, 1e-5], {},
                            meta([([2, 16, 64], "f32")] * 3, ([2, 16, 64], "f32")))
        qkv, _ = aten.map_call(w, "qkv", "linear", [ln, wt, b], {},
                             meta([([2, 16, 64], "f32"), ([192, 64], "f32"), ([192], "f32")], ([2, 16, 192], "f32")))
        q, k, v = aten.map_call(w, "split", "split", [qkv, 64, 2], {},
                              meta([([2, 16, 192], "f32")], [([2, 16, 64], "f32")] * 3))[0]
        kt, _ = aten.map_call(w, "kt", "transpose", [k, -1, -2], {}, meta([([2, 16, 64], "f32")], ([2, 64, 16], "f32")))
        s, _ = aten.map_call(w, "s", "matmul", [q, kt], {}, meta([([2, 16, 64], "f32"), ([2, 64, 16], "f32")],
                                                                ([2, 16, 16], "f32")))
        p, _ = aten.map_call(w, "p", "softmax", [s, -1, False], {}, meta([([2, 16, 16], "f32")], ([2, 16, 16], "f32")))
        o, _ = aten.map_call(w, "o", "matmul", [p, v], {}, meta([([2, 16, 16], "f32"), ([2, 16, 64], "f32")],
                                                               ([2, 16, 64], "f32")))
        w.outputs.append(o.name)
        self.assertEqual(repair.cli_validator(find_cli())(w.to_json()), "")


if __name__ == "__main__":
    unittest.main(verbosity=1)
