"""The pure-Python half of bench.py: reading fusion-cli's run JSON, the derived numbers, and the text, Markdown
and JSON reports. No torch here, so all of it is unit-tested on a machine without a GPU."""
import json
import math
import os

NA = "n/a"
SYSTEMS = ("eager", "compile", "fx_unfused", "fx_fused")
TITLES = {"eager": "eager", "compile": "torch.compile", "fx_unfused": "FX unfused", "fx_fused": "FX fused"}


def _number(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value) else None


def _plan_table(doc):
    """fusion-cli's plans by name, from {"plans": {name: plan}}, {"plans": [{"name": ...}]} or top-level keys."""
    plans = doc.get("plans", doc) if isinstance(doc, dict) else {}
    if isinstance(plans, list):
        plans = {p.get("name", p.get("plan")): p for p in plans if isinstance(p, dict)}
    return plans if isinstance(plans, dict) else {}


def read_fx_plan(doc, plan):
    """One plan's {"ms", "kernels"} from `fusion-cli run FILE --auto --json OUT`, or {"error": why}.
    Per plan the JSON holds "kernels" (a list of {"name", "measured_ms"}) and "total_ms"; anything missing or
    malformed reads as n/a with the reason, never as zero."""
    names = {"fused": ("fused", "auto"), "unfused": ("unfused",)}[plan]
    table = _plan_table(doc)
    entry = next((table[n] for n in names if isinstance(table.get(n), dict)), None)
    if entry is None:
        return {"error": f"no '{plan}' plan in the JSON"}
    kernels = entry.get("kernels")
    count = len(kernels) if isinstance(kernels, list) else None
    total = _number(entry.get("total_ms"))
    if total is None and isinstance(kernels, list) and kernels:
        times = [_number(k.get("measured_ms")) if isinstance(k, dict) else None for k in kernels]
        total = sum(times) if all(t is not None for t in times) else None
    if total is None:
        return {"error": f"'{plan}' plan has no total_ms", "kernels": count}
    return {"ms": total, "kernels": count}


def bandwidth_fraction(min_bytes, ms, copy_bytes_per_s):
    """Minimum traffic over the measured time, as a fraction of device-to-device copy bandwidth."""
    if ms is None or ms <= 0 or not copy_bytes_per_s:
        return None
    return min_bytes / (ms * 1e-3) / copy_bytes_per_s


def first_ms(entry):
    ms = entry.get("ms") if isinstance(entry, dict) else None
    return ms[0] if isinstance(ms, list) and ms and ms[0] is not None else None


def derive(row, copy_bytes_per_s):
    """Adds the ratio fused / torch.compile, the bandwidth fractions (memory-bound graphs only: a GEMM's time
    is set by FLOPs, so its fraction of copy bandwidth says nothing) and the run-to-run spread."""
    fused, compiled = first_ms(row.get("fx_fused")), first_ms(row.get("compile"))
    row["ratio_fused_compile"] = fused / compiled if fused and compiled else None
    row["bw_fraction"] = {}
    for s in SYSTEMS:
        frac = None if row.get("has_contraction") else bandwidth_fraction(
            row["min_bytes"], first_ms(row.get(s)), copy_bytes_per_s)
        row["bw_fraction"][s] = frac
    spreads = []
    for s in SYSTEMS:
        ms = row.get(s, {}).get("ms") if isinstance(row.get(s), dict) else None
        if isinstance(ms, list) and len(ms) > 1 and all(m for m in ms):
            spreads.append((max(ms) - min(ms)) / min(ms))
    row["spread"] = max(spreads) if spreads else None
    return row


def _ms_cell(entry):
    if not isinstance(entry, dict) or not isinstance(entry.get("ms"), list) or entry["ms"][0] is None:
        return NA
    ms = entry["ms"]
    text = f"{ms[0]:.3f}"
    return text + (f" ({ms[1]:.3f})" if len(ms) > 1 and ms[1] is not None else "")


def _k_cell(entry):
    k = entry.get("kernels") if isinstance(entry, dict) else None
    return str(k) if isinstance(k, int) else NA


def _f(value, fmt):
    return NA if value is None else format(value, fmt)


def table_rows(rows):
    header = ["sample", "min MiB"]
    for s in SYSTEMS:
        header += [f"{TITLES[s]} ms (run 2)", "k"]
    header += ["fused/compile", "bw eager", "bw compile", "bw FX fused", "spread"]
    body = []
    for r in rows:
        line = [r["name"], f"{r['min_bytes'] / 2**20:.1f}"]
        for s in SYSTEMS:
            line += [_ms_cell(r.get(s)), _k_cell(r.get(s))]
        bw = r.get("bw_fraction", {})
        line += [_f(r.get("ratio_fused_compile"), ".2f"), _f(bw.get("eager"), ".2f"), _f(bw.get("compile"), ".2f"),
                 _f(bw.get("fx_fused"), ".2f"), NA if r.get("spread") is None else f"{100 * r['spread']:.1f}%"]
        body.append(line)
    return header, body


def text_table(rows):
    header, body = table_rows(rows)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    fmt = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(b) for b in body])


def notes(rows):
    out = []
    for r in rows:
        for s in SYSTEMS:
            err = r.get(s, {}).get("error") if isinstance(r.get(s), dict) else None
            if err:
                out.append(f"{r['name']} {TITLES[s]}: {err}")
    return out


def markdown(report):
    header, body = table_rows(report["samples"])
    lines = [f"# Fusion Explorer vs PyTorch on {report.get('device', 'unknown device')}", "",
             f"torch {report.get('torch')}, triton {report.get('triton')}; device-to-device copy "
             f"{report.get('copy_tb_s', 0):.2f} TB/s (read + write). Timing: "
             f"{report.get('timing', 'medians of triton.testing.do_bench')}. The "
             "value in parentheses is a second run of the same code, `spread` the largest difference between "
             "the two runs. `k` = CUDA kernels per call. `bw` = minimum bytes (inputs read once, outputs "
             "written once) per second as a fraction of copy bandwidth, for graphs without a contraction. "
             "fused/compile < 1: Fusion Explorer's fused plan is faster than torch.compile.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(b) + " |" for b in body]
    extra = notes(report["samples"])
    if extra:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in extra]
    return "\n".join(lines) + "\n"


def write_reports(report, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "bench.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    with open(os.path.join(out_dir, "bench.md"), "w", encoding="utf-8") as f:
        f.write(markdown(report))
