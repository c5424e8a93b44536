"""Paired timings of Fusion Explorer's fused plan against torch.compile (bench/python/paired.py): the order of each
pair, the statistics of the ratios and the report. Plain Python, kept apart from paired.py (which needs torch
and a GPU) so that the unit tests check it anywhere (test_graph_parse.py).

Why pairs: on a power-limited GPU the same bf16 GEMM timed in rounds a minute apart can move by more than the
difference between the two sides; timed seconds apart, in alternating order, the two
sides of a pair share the GPU's heat and power, and a drift moves both. The ratio of each pair is one
observation; its median comes with a distribution-free confidence interval (order statistics of the ratios)."""
import argparse
import json
import math
import os
import random
import statistics
import sys

# The confidence asked of the interval around the median ratio.
CONFIDENCE = 0.95


def pair_order(i):
    """Which side goes first in pair i: alternating, so that neither side always follows the other's heat."""
    return ("compile", "fx") if i % 2 == 0 else ("fx", "compile")


# Buffer gaps drawn per pair with --placements (paired.py): up to this many MiB before each buffer, on both sides
# (fusion-cli run --placement: 0-15 MiB, kernels/executor placement_gap).
PLACEMENT_GAP_MIB = 16


def placement(name, i):
    """Pair i's placement for the sample `name` with --placements: fusion-cli's --placement seed (1 to 2^31 - 1)
    and the gaps in MiB before PyTorch's inputs are drawn from it. The same sample and pair give the same
    placement in every run, so a run can be repeated; other pairs and samples give others."""
    rng = random.Random(f"{name}:{i}")
    return rng.randrange(1, 2**31)


def torch_gaps_mib(seed, count):
    """The gaps (MiB, 0 to PLACEMENT_GAP_MIB - 1) PyTorch's side leaves before each of its `count` inputs."""
    rng = random.Random(seed)
    return [rng.randrange(PLACEMENT_GAP_MIB) for _ in range(count)]


def placement_offsets(seed, sizes):
    """Where PyTorch's inputs of `sizes` bytes go in one allocation of the returned total, as fusion-cli lays out
    its arena: a gap (torch_gaps_mib) before each, each start 256-byte aligned. (offsets, total bytes)."""
    offsets, at = [], 0
    for size, gap in zip(sizes, torch_gaps_mib(seed, len(sizes))):
        at += gap << 20
        offsets.append(at)
        at += (size + 255) // 256 * 256
    return offsets, max(at, 1)


def _binom_cdf(k, n):
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    return sum(math.comb(n, j) for j in range(0, min(k, n) + 1)) / 2.0 ** n


def median_interval(values, confidence=CONFIDENCE):
    """(low, high, coverage): the order statistics x_(k) <= median <= x_(n+1-k) with the largest k whose
    coverage 1 - 2 P(X <= k-1), X ~ Binomial(n, 1/2), is at least `confidence` (the sign-test interval, no
    assumption on the ratios' distribution). None where n is too small for that confidence (n < 6 at 95%)."""
    x = sorted(values)
    n = len(x)
    best = None
    for k in range(1, n // 2 + 1):
        coverage = 1.0 - 2.0 * _binom_cdf(k - 1, n)
        if coverage >= confidence:
            best = (x[k - 1], x[n - k], coverage)
        else:
            break
    return best


def median(values):
    """statistics.median, None for no values."""
    return statistics.median(values) if values else None


def verdict(low, high):
    """What the interval says of fused / torch.compile."""
    if low is None:
        return "too few pairs for an interval"
    if high < 1.0:
        return "fused faster"
    if low > 1.0:
        return "torch.compile faster"
    return "no difference shown"


def summarize(pairs, confidence=CONFIDENCE):
    """pairs: [{"compile_ms", "fused_ms", "unfused_ms", "compile_mhz", "fx_mhz", "first"}] (MHz may be None).
    The pairs' ratios fused / compile and their summary."""
    ok = [p for p in pairs if p.get("compile_ms") and p.get("fused_ms")]
    ratios = [p["fused_ms"] / p["compile_ms"] for p in ok]
    out = {"pairs": len(ok), "ratios": ratios, "ratio_median": median(ratios),
           "compile_ms_median": median([p["compile_ms"] for p in ok]),
           "fused_ms_median": median([p["fused_ms"] for p in ok]),
           "unfused_ms_median": median([p["unfused_ms"] for p in ok if p.get("unfused_ms")]),
           "fused_faster_in": sum(r < 1.0 for r in ratios),
           "compile_mhz_median": median([p["compile_mhz"] for p in ok if p.get("compile_mhz")]),
           "fx_mhz_median": median([p["fx_mhz"] for p in ok if p.get("fx_mhz")])}
    interval = median_interval(ratios, confidence) if ratios else None
    out["interval"] = list(interval[:2]) if interval else None
    out["coverage"] = interval[2] if interval else None
    out["verdict"] = verdict(*(interval[:2] if interval else (None, None)))
    # Each side's spread over the pairs (max / min - 1): what unpaired rounds would have had to see through.
    for side in ("compile_ms", "fused_ms"):
        xs = [p[side] for p in ok]
        out[side.replace("_ms", "_spread")] = (max(xs) / min(xs) - 1.0) if xs else None
    return out


def _f(x, fmt):
    return "-" if x is None else format(x, fmt)


def markdown(rows):
    """rows: [{"name", "kernels": {"compile", "fused"}, "summary", "error"?}] -> a Markdown table."""
    lines = ["| sample | pairs | torch.compile ms (k) | FX fused ms (k) | fused/compile median | interval | coverage "
             "| fused faster in | verdict | spread compile / fused | SM MHz compile / FX |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['name']} | error: {r['error']} |" + " |" * 9)
            continue
        s, k = r["summary"], r.get("kernels", {})
        iv = s["interval"]
        lines.append(
            f"| {r['name']} | {s['pairs']} | {_f(s['compile_ms_median'], '.4f')} ({k.get('compile', '-')}) "
            f"| {_f(s['fused_ms_median'], '.4f')} ({k.get('fused', '-')}) | {_f(s['ratio_median'], '.4f')} "
            f"| {'-' if not iv else f'{iv[0]:.4f} - {iv[1]:.4f}'} | {_f(s['coverage'], '.1%')} "
            f"| {s['fused_faster_in']} of {s['pairs']} | {s['verdict']} "
            f"| {_f(s['compile_spread'], '.1%')} / {_f(s['fused_spread'], '.1%')} "
            f"| {_f(s['compile_mhz_median'], '.0f')} / {_f(s['fx_mhz_median'], '.0f')} |")
    return "\n".join(lines)


def merge(reports):
    """Several paired.py reports of one device and versions as one, their samples in the order given."""
    first = reports[0]
    for r in reports[1:]:
        for key in ("device", "torch", "triton", "timing", "confidence"):
            if r.get(key) != first.get(key):
                raise ValueError(f"reports differ in {key}: {first.get(key)!r} and {r.get(key)!r}")
    merged = dict(first)
    merged["samples"] = [s for r in reports for s in r["samples"]]
    merged["seconds"] = round(sum(r.get("seconds", 0) for r in reports), 1)
    return merged


def write(report, out):
    """paired.json and paired.md in `out`."""
    os.makedirs(out, exist_ok=True)
    table = markdown(report["samples"])
    with open(os.path.join(out, "paired.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(out, "paired.md"), "w", encoding="utf-8") as f:
        f.write(f"Paired timings on {report['device']} (torch {report['torch']}, triton {report['triton']}); "
                f"{report['timing']}.\n\n{table}\n")
    return table


def main(argv):
    ap = argparse.ArgumentParser(description="merge paired.py reports (one device, one set of versions)")
    ap.add_argument("command", choices=["merge"])
    ap.add_argument("--out", required=True)
    ap.add_argument("reports", nargs="+")
    args = ap.parse_args(argv)
    reports = []
    for path in args.reports:
        with open(path, encoding="utf-8") as f:
            reports.append(json.load(f))
    try:
        print(write(merge(reports), args.out))
    except ValueError as e:
        raise SystemExit(f"pairs merge: {e}") from None
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
