#!/usr/bin/env python3
"""The package's format reader/writer and its JSON Schema validator (no torch). Every sample graph and every
fixture must read; when the repository publishes schemas (schemas/), the writer's output must validate against
them, and when fusion-cli is built, the C++ loader must accept what the writer wrote."""
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from fusion_explorer import graph_format, schema  # noqa: E402
from fusion_explorer.graph_format import FormatError, GraphWriter  # noqa: E402
from test_aten import find_cli  # noqa: E402


def small_graph():
    w = GraphWriter("small", "relu then add")
    x = w.add_input("x", [4, 8], "f32")
    w.source = "model.py:3"
    r = w.add_node("relu", "relu", [x], None, [4, 8], "f32")
    w.add_node("add", "add", [r, 1.0], None, [4, 8], "f32")
    w.outputs.append("add")
    return w.to_json()


class ReaderTest(unittest.TestCase):
    def test_samples_and_fixture_graphs_read(self):
        paths = glob.glob(os.path.join(ROOT, "sample_graphs", "*.json"))
        self.assertGreater(len(paths), 10)
        for path in paths:
            with self.subTest(path=os.path.basename(path)):
                graph_format.read_graph(path)

    def test_bad_documents_name_the_place(self):
        g = small_graph()
        g["nodes"][1]["inputs"][0] = "nope"
        with self.assertRaisesRegex(FormatError, r"^/nodes/1/inputs/0: 'nope' is not defined"):
            graph_format.read_graph(g)
        g = small_graph()
        g["outputs"] = ["missing"]
        with self.assertRaisesRegex(FormatError, r"^/outputs/0"):
            graph_format.read_graph(g)
        with self.assertRaisesRegex(FormatError, r"^/version"):
            graph_format.read_graph(dict(small_graph(), version=2))

    def test_plans_must_partition_and_name_real_nodes(self):
        plan = dict(small_graph(), fusion={"groups": [{"nodes": ["relu", "add"]}]})
        self.assertEqual(graph_format.plan_groups(graph_format.read_plan(plan)), [["relu", "add"]])
        plan["fusion"] = {"groups": [{"nodes": ["relu"]}, {"nodes": ["relu"]}]}
        with self.assertRaisesRegex(FormatError, r"^/fusion/groups/1/nodes/0: node 'relu' is also in"):
            graph_format.read_plan(plan)
        plan["fusion"] = {"source": "xla", "groups": []}
        with self.assertRaisesRegex(FormatError, r"^/fusion/source"):
            graph_format.read_plan(plan)
        plan["fusion"] = {"groups": [{"nodes": ["relu"]}]}
        self.assertEqual(graph_format.plan_groups(plan), [["relu"], ["add"]])

    def test_bad_json_says_line_and_column(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write('{"format": \n  nope}')
        try:
            with self.assertRaisesRegex(FormatError, "line 2 column 3"):
                graph_format.read_graph(f.name)
        finally:
            os.unlink(f.name)


class SchemaValidatorTest(unittest.TestCase):
    SCHEMA = {
        "$defs": {"dims": {"type": "array", "items": {"type": "integer", "minimum": 0}}},
        "type": "object", "required": ["name", "shape"], "additionalProperties": False,
        "properties": {"name": {"type": "string", "minLength": 1}, "shape": {"$ref": "#/$defs/dims"},
                       "dtype": {"enum": ["f32", "f16"]},
                       "role": {"oneOf": [{"const": "weight"}, {"const": "activation"}]}},
    }

    def test_accepts_a_valid_document(self):
        schema.validate({"name": "x", "shape": [2, 3], "dtype": "f32", "role": "weight"}, self.SCHEMA)

    def test_each_violation_is_named_with_its_pointer(self):
        cases = [({"name": "x"}, "/: missing field 'shape'"),
                 ({"name": "x", "shape": [2, -1]}, "/shape/1: -1 is below the minimum 0"),
                 ({"name": "x", "shape": [], "dtype": "f64"}, "/dtype: 'f64' is not one of"),
                 ({"name": "x", "shape": [], "extra": 1}, "/extra: unknown field 'extra'"),
                 ({"name": "", "shape": []}, "/name: shorter than 1"),
                 ({"name": "x", "shape": [], "role": "bias"}, "/role: matches 0 of the forms"),
                 ({"name": "x", "shape": "4"}, "/shape: must be of type array")]
        for doc, message in cases:
            with self.subTest(doc=doc):
                with self.assertRaises(schema.SchemaError) as ctx:
                    schema.validate(doc, self.SCHEMA)
                self.assertIn(message, str(ctx.exception))

    def test_published_schemas_are_used_when_present(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "graph.schema.json"), "w") as f:
                json.dump({"type": "object", "required": ["format", "colour"]}, f)
            self.assertIsNone(schema.check(small_graph(), "fused_graph", d))
            with self.assertRaisesRegex(schema.SchemaError, "missing field 'colour'"):
                schema.check(small_graph(), "graph", d)

    @unittest.skipUnless(schema.find_schema("graph"), "the repository publishes no schemas/graph.schema.json yet")
    def test_the_writers_output_validates_against_the_published_schema(self):
        self.assertTrue(schema.check(small_graph(), "graph"))
        plan = graph_format.load_json(os.path.join(HERE, "fixtures", "crafted_inductor_plan_mlp.json"))
        schema.check(plan, "graph")
        if schema.find_schema("fused_graph"):
            schema.check(plan, "fused_graph")


class CliAgreesTest(unittest.TestCase):
    @unittest.skipUnless(find_cli(), "fusion-cli is not built")
    def test_fusion_cli_accepts_what_the_writer_writes_sources_included(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "g.json")
            graph_format.write_json(small_graph(), path)
            proc = subprocess.run([find_cli(), "validate", path], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            info = subprocess.run([find_cli(), "validate", os.path.join(HERE, "fixtures", "crafted_our_plan_mlp.json")],
                                  capture_output=True, text=True)
            self.assertEqual(info.returncode, 0, info.stderr)

    def test_the_committed_inductor_plan_is_what_the_converter_makes(self):
        from fusion_explorer import inductor_plan
        cap = graph_format.load_json(os.path.join(HERE, "fixtures", "crafted_capture_mlp.json"))
        committed = graph_format.load_json(os.path.join(HERE, "fixtures", "crafted_inductor_plan_mlp.json"))
        self.assertEqual(inductor_plan.to_plan(cap), committed)


if __name__ == "__main__":
    unittest.main(verbosity=1)
