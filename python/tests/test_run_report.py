#!/usr/bin/env python3
"""The run report read in Python (fusion_explorer.run_report) through the published schema: every report the
repository ships reads; another version, another format or a value the schema rejects is refused with the JSON
pointer of the offending value. No torch."""
import copy
import glob
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from fusion_explorer import run_report, schema  # noqa: E402


def shipped_reports():
    paths = []
    for pattern in ("tests/data/run-reports/*.json", "lessons/runs/*.json", "docs/data/runs/**/*.json"):
        for path in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            with open(path, encoding="utf-8") as f:
                if '"fusion-explorer/run"' in f.read():
                    paths.append(path)
    return sorted(paths)


@unittest.skipUnless(schema.find_schema("run_report"), "schemas/run-report.schema.json is not published here")
class RunReport(unittest.TestCase):
    def setUp(self):
        self.report = run_report.load_run_report(os.path.join(ROOT, "tests", "data", "run-reports",
                                                              "relu_mul_add.h100.json"))

    def test_every_shipped_report_reads(self):
        paths = shipped_reports()
        self.assertGreaterEqual(len(paths), 9)
        for path in paths:
            doc = run_report.load_run_report(path)
            self.assertEqual(doc["format"], "fusion-explorer/run", path)

    def test_the_fields_are_the_schemas(self):
        self.assertEqual([p["name"] for p in self.report["plans"]], ["unfused", "fused"])
        self.assertGreater(self.report["plans"][0]["total_ms"], self.report["plans"][1]["total_ms"])

    def test_another_version_or_format_is_refused(self):
        doc = copy.deepcopy(self.report)
        doc["version"] = 2
        with self.assertRaisesRegex(schema.SchemaError, r"^/version: .*version 2.*reads version 1"):
            run_report.parse_run_report(doc)
        doc["version"] = 1
        doc["format"] = "fusion-explorer/graph"
        with self.assertRaisesRegex(schema.SchemaError, r"^/format: "):
            run_report.parse_run_report(doc)

    def test_a_value_the_schema_rejects_is_located(self):
        doc = copy.deepcopy(self.report)
        doc["plans"][1]["kernels"][0]["measured_ms"] = "fast"
        with self.assertRaisesRegex(schema.SchemaError, "/plans/1/kernels/0/measured_ms"):
            run_report.parse_run_report(doc)
        with self.assertRaises(schema.SchemaError):
            run_report.parse_run_report([1, 2])


if __name__ == "__main__":
    unittest.main()
