#!/usr/bin/env python3
"""fusion-cli report, checked the way a reader's tools would see it: the file parses with a strict XML parser
(expat: XHTML), the two graph pictures and the charts are SVG that parse, nothing is fetched from outside, and the
numbers in it are the engine's (fusion-cli fuse --json) and the run report's.

usage: test_report_html.py REPO_ROOT FUSION_CLI WORK_DIR
"""
import json
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

XHTML = "{http://www.w3.org/1999/xhtml}"
SVG = "{http://www.w3.org/2000/svg}"
NAMESPACES = ("http://www.w3.org/1999/xhtml", "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink")


def run(cli, *args):
    return subprocess.run([cli, *map(str, args)], capture_output=True, text=True, timeout=120)


def external_references(root):
    found = []
    for el in root.iter():
        for key, value in el.attrib.items():
            local = key.split("}")[-1]
            if local == "src" or (local == "href" and not value.startswith("#")):
                found.append(f"{el.tag} {key}={value}")
        text = (el.text or "") + " ".join(el.attrib.values())
        for word in text.split():
            if ("http:" in word or "https:" in word) and not any(ns in word for ns in NAMESPACES):
                found.append(word)
        if el.tag in (XHTML + "script", XHTML + "link", XHTML + "iframe", XHTML + "img"):
            found.append(el.tag)
    return found


def rows(root, table_id):
    for table in root.iter(XHTML + "table"):
        if table.get("id") == table_id:
            return [tr for tr in table.iter(XHTML + "tr") if tr.get("data-plan") or tr.get("data-group")
                    or tr.get("data-kernel") or tr.get("data-candidate")]
    return None


def check_report(root, repo, cli, graph, run_report, failures):
    bad = external_references(root)
    if bad:
        failures.append(f"external references: {bad[:5]}")
    figures = {f.get("id"): f for f in root.iter(XHTML + "figure")}
    for fig_id in ("before", "after", "times", "roofline"):
        svg = figures.get(fig_id, ET.Element("x")).find(SVG + "svg")
        if svg is None:
            failures.append(f"figure {fig_id} holds no SVG")
    names = {n["name"] for n in json.loads((repo / "sample_graphs" / graph).read_text())["nodes"]}
    for fig_id in ("before", "after"):
        # Graphviz draws each node's name as the first line of its label.
        labels = {t.text for t in figures[fig_id].iter(SVG + "text")} if fig_id in figures else set()
        if not names <= labels:
            failures.append(f"the {fig_id} picture lacks nodes {sorted(names - labels)}")
    clusters = [g for g in figures["after"].iter(SVG + "g") if g.get("class") == "cluster"] if "after" in figures else []
    if not clusters:
        failures.append("the after picture draws no fusion group")
    engine = json.loads(run(cli, "fuse", repo / "sample_graphs" / graph, "--auto", "--device", "h100", "--json").stdout)
    fused = [r for r in rows(root, "summary") if r.get("data-plan") == "fused"]
    if not fused or int(fused[0].get("data-kernels")) != engine["kernels"] or \
            abs(float(fused[0].get("data-predicted-us")) - engine["predicted_time_us"]) > 1e-6 * engine["predicted_time_us"]:
        failures.append(f"the summary's fused row {fused and fused[0].attrib} is not the engine's {engine['kernels']}, "
                        f"{engine['predicted_time_us']}")
    logged = {(e["candidate"], e["reason"]) for e in engine["entries"]}
    shown = {(r.get("data-candidate"), r.get("data-reason")) for r in rows(root, "decisions") or []}
    if logged != shown:
        failures.append(f"decisions shown {shown} are not the engine's log {logged}")
    report = json.loads(run_report.read_text())
    measured = {r.get("data-plan"): r for r in rows(root, "measured") or []}
    for plan in report["plans"]:
        row = measured.get(plan["name"])
        if row is None or float(row.get("data-measured-ms")) != plan["total_ms"] or \
                float(row.get("data-measured-bytes")) != plan["measured"]["bytes"]:
            failures.append(f"the measured row of {plan['name']} is not the run report's")


def main():
    repo, cli, work = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3])
    work.mkdir(parents=True, exist_ok=True)
    failures = []
    run_report = repo / "tests" / "data" / "run-reports" / "relu_mul_add.h100.json"
    out = work / "relu_mul_add.html"
    r = run(cli, "report", repo / "sample_graphs" / "relu_mul_add.json", "--run", run_report, "-o", out)
    if r.returncode != 0:
        print("FAIL: fusion-cli report:", r.stderr)
        return 1
    root = ET.parse(out).getroot()  # expat: any malformed tag, attribute or entity raises
    if root.tag != XHTML + "html":
        failures.append(f"the root is {root.tag}")
    check_report(root, repo, cli, "relu_mul_add.json", run_report, failures)

    # A run report of another graph, and one of a GPU fault, are refused rather than shown.
    other = run(cli, "report", repo / "sample_graphs" / "sin_cos.json", "--run", run_report, "-o", work / "x.html")
    if other.returncode != 2 or "relu_mul_add" not in other.stderr:
        failures.append(f"a report of another graph was not refused: {other.returncode} {other.stderr}")
    fault = run(cli, "report", repo / "sample_graphs" / "relu_mul_add.json", "--run",
                repo / "tests" / "data" / "run-reports" / "gpu_fault.h100.json", "-o", work / "y.html")
    if fault.returncode != 2 or "/status" not in fault.stderr:
        failures.append(f"a GPU fault's report was not refused: {fault.returncode} {fault.stderr}")
    # Without a run report every sample's report parses; a large one (ResNet-18) too.
    for sample in ("gpt2_block.json", "resnet18.json", "swiglu_bf16.json"):
        path = work / sample.replace(".json", ".html")
        r = run(cli, "report", repo / "sample_graphs" / sample, "-o", path)
        if r.returncode != 0:
            failures.append(f"fusion-cli report {sample}: {r.stderr}")
            continue
        bad = external_references(ET.parse(path).getroot())
        if bad:
            failures.append(f"{sample}: external references {bad[:3]}")
    for f in failures:
        print("FAIL:", f)
    print(f"report checks: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
