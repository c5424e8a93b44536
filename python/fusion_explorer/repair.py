"""Validation with the C++ loader (`fusion-cli validate`) and the fallback the ONNX importer also uses: nodes the
tool rejects become `custom` nodes carrying the shape PyTorch stated, and the file is validated again."""
import json
import os
import re
import subprocess
import tempfile


NODE_POINTER = re.compile(r"/nodes/(\d+)")


def rejected_nodes(diagnostics_text):
    return sorted({int(m.group(1)) for m in NODE_POINTER.finditer(diagnostics_text)})


def make_custom(node):
    refs = [i for i in node["inputs"] if isinstance(i, str)]
    custom = {"name": node["name"], "op": "custom", "inputs": refs, "attrs": {"label": f"{node['op']} (rejected)"},
              "shape": node["shape"], "dtype": node["dtype"]}
    if "source" in node:
        custom["source"] = node["source"]
    return custom


def _root_causes(graph, bad):
    """The rejected nodes none of whose producers is rejected: a wrong stated shape upstream makes its
    consumers disagree too, and those recover once the root is replaced."""
    index = {n["name"]: i for i, n in enumerate(graph["nodes"])}
    bad_set, memo = set(bad), {}

    def upstream_bad(i, seen):
        if i in memo:
            return memo[i]
        result = False
        for name in graph["nodes"][i]["inputs"]:
            j = index.get(name) if isinstance(name, str) else None
            if j is not None and j not in seen:
                seen.add(j)
                if j in bad_set or upstream_bad(j, seen):
                    result = True
                    break
        memo[i] = result
        return result
    return [i for i in bad if not upstream_bad(i, set())]


def repair(graph, validate, max_rounds=200):
    """Validates with `validate(graph) -> diagnostics text or ''`; replaces rejected nodes until it passes."""
    replaced = []
    for _ in range(max_rounds):
        text = validate(graph)
        if not text:
            return replaced
        bad = [i for i in rejected_nodes(text) if i < len(graph["nodes"]) and "shape" in graph["nodes"][i]
               and graph["nodes"][i]["op"] != "custom"]
        if not bad:
            raise RuntimeError("the graph does not validate and no node can be replaced:\n" + text)
        bad = _root_causes(graph, bad)
        for i in bad:
            replaced.append((graph["nodes"][i]["name"], graph["nodes"][i]["op"]))
            graph["nodes"][i] = make_custom(graph["nodes"][i])
    raise RuntimeError("gave up after %d rounds" % max_rounds)


def cli_validator(cli):
    def validate(graph):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(graph, f)
        try:
            proc = subprocess.run([cli, "validate", f.name, "--quiet"], capture_output=True, text=True)
        finally:
            os.unlink(f.name)
        return "" if proc.returncode == 0 else proc.stderr or proc.stdout
    return validate


def summarize(graph, fallbacks):
    ops = {}
    for n in graph["nodes"]:
        key = n["op"] if n["op"] != "custom" else "custom:" + n["attrs"]["label"]
        ops[key] = ops.get(key, 0) + 1
    lines = [f"{len(graph['nodes'])} nodes: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items()))]
    for op, reason in sorted(set(fallbacks)):
        lines.append(f"  custom {op}: {reason}")
    return "\n".join(lines)
