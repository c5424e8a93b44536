#!/usr/bin/env python3
"""The run report and timing protocol formats against their JSON Schemas (schemas/*.schema.json, draft 2020-12):
the reports kept in tests/data/run-reports, the JSON fusion-cli's writer produces (fx_kernels_tests'
ReportWriter test, with FX_KERNELS_TESTS set), and the timing protocol files the docs show. Needs python3-jsonschema."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import jsonschema

# The schemas are draft 2020-12, which jsonschema validates from 4.0 (Ubuntu 22.04 ships 3.2): say so and skip.
if not hasattr(jsonschema, "Draft202012Validator"):
    print("skipped: this jsonschema (" + getattr(jsonschema, "__version__", "?") + ") has no draft 2020-12 validator; "
          "jsonschema 4 or newer has one (Debian 12's python3-jsonschema, or pip install 'jsonschema>=4')")
    sys.exit(77)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def validator(name):
    with open(os.path.join(REPO, "schemas", name), encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(v, doc):
    return [f"{e.json_path}: {e.message}" for e in v.iter_errors(doc)]


class RunReportSchema(unittest.TestCase):
    def setUp(self):
        self.v = validator("run-report.schema.json")

    def test_the_kept_reports_are_valid(self):
        files = sorted(glob.glob(os.path.join(REPO, "tests", "data", "run-reports", "*.json")))
        self.assertTrue(files)
        for path in files:
            with open(path, encoding="utf-8") as f:
                self.assertEqual(errors(self.v, json.load(f)), [], path)

    def test_the_writers_output_is_valid(self):
        tests = os.environ.get("FX_KERNELS_TESTS")
        if not tests:
            self.skipTest("FX_KERNELS_TESTS not set (a build without CUDA has no writer)")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "report.json")
            env = dict(os.environ, FX_REPORT_OUT=out)
            r = subprocess.run([tests, "--gtest_filter=ReportWriter.*"], env=env, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(out, encoding="utf-8") as f:
                report = json.load(f)
        self.assertEqual(errors(self.v, report), [])

    def test_a_broken_report_is_refused(self):
        with open(os.path.join(REPO, "tests", "data", "run-reports", "relu_mul_add.h100.json"), encoding="utf-8") as f:
            report = json.load(f)
        report["version"] = 2
        report["plans"][0]["kernels"][0]["measured_ms"] = "fast"
        found = errors(self.v, report)
        self.assertTrue(any("version" in e for e in found), found)
        self.assertTrue(any("measured_ms" in e for e in found), found)
        fault = {"format": "fusion-explorer/run", "version": 1, "status": "gpu_fault", "device": None,
                 "plans": [], "fault": {}}
        self.assertTrue(errors(self.v, fault))  # a fault carries no plans, and names its error


    def test_a_shared_window_names_its_step_and_count(self):
        with open(os.path.join(REPO, "tests", "data", "run-reports", "relu_mul_add.h100.json"), encoding="utf-8") as f:
            report = json.load(f)
        measured = report["plans"][1]["kernels"][0]["measured"]
        measured["shared_window"] = {"plan": "unfused", "step": 2, "kernel": "fx_g2_y", "steps": 2}
        self.assertEqual(errors(self.v, report), [])
        for broken in ({"plan": "unfused", "step": 2, "kernel": "fx_g2_y"},          # no count
                       {"plan": "unfused", "step": 2, "kernel": "fx_g2_y", "steps": 1},  # shared by itself alone
                       {"plan": "other", "step": 2, "kernel": "fx_g2_y", "steps": 2},
                       {"plan": "unfused", "step": -1, "kernel": "fx_g2_y", "steps": 2}):
            measured["shared_window"] = broken
            self.assertTrue(any("shared_window" in e for e in errors(self.v, report)), broken)


class TimingProtocolSchema(unittest.TestCase):
    def test_the_docs_examples_and_the_presets_are_valid(self):
        v = validator("timing-protocol.schema.json")
        with open(os.path.join(REPO, "docs", "measurement.md"), encoding="utf-8") as f:
            blocks = re.findall(r"```json\n(.*?)```", f.read(), re.S)
        protocols = [json.loads(b) for b in blocks if "timing-protocol" in b]
        self.assertTrue(protocols)
        protocols += [{"preset": "interactive"}, {"preset": "do_bench", "placement": 3}]
        for p in protocols:
            self.assertEqual(errors(v, p), [], p)
        self.assertTrue(errors(v, {"preset": "do_bench", "rest_ms": -1}))
        self.assertTrue(errors(v, {"flush": True}))


if __name__ == "__main__":
    sys.exit(unittest.main())
