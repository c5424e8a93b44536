"""The pure-Python half of bench.py: reading fusion-cli's run reports (through the fusion_explorer package's
run_report, which checks them against the published schema), the derived numbers, and the text, Markdown and JSON
reports. No torch here, so all of it is unit-tested on a machine without a GPU."""
import itertools
import json
import os
import re
import sys

# The repository's Python package (python/fusion_explorer): the one reader of the run report.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from fusion_explorer import run_report  # noqa: E402

NA = "n/a"
SYSTEMS = ("eager", "compile", "fx_unfused", "fx_fused")
TITLES = {"eager": "eager", "compile": "torch.compile", "fx_unfused": "FX unfused", "fx_fused": "FX fused"}


class ReportError(ValueError):
    """A fusion-cli run report this harness does not read; the message names the file."""


def load_fx_report(path):
    """The report `fusion-cli run --json OUT` wrote at `path`, read through the package's run_report (the published
    schema, schemas/run-report.schema.json). A file that is not JSON, a report of another format or version, or one
    the schema rejects raises ReportError naming the file and the offending value's JSON pointer."""
    try:
        return run_report.load_run_report(path)
    except (OSError, ValueError) as e:  # SchemaError and JSONDecodeError are ValueErrors
        raise ReportError(f"{path}: not a run report this harness reads: {e}") from None


def plan_entry(report, plan):
    """The "unfused" or "fused" plan of a report from load_fx_report; None where the run has none (a GPU fault)."""
    return next((p for p in report.get("plans", []) if p["name"] == plan), None)


def plan_steps(report, plan):
    """What each step of a plan ran: [{"name", "path", "ms"}], the path being the layout or the library's algorithm
    the run chose ("" where there was no choice; tuning and cuBLASLt's search run again in every `fusion-cli run`,
    so each round may choose otherwise); [] where the run has no such plan."""
    entry = plan_entry(report, plan)
    if entry is None:
        return []
    return [{"name": k["name"], "path": k.get("path"), "ms": k["measured_ms"]} for k in entry["kernels"]]


def _no_plan(report, plan):
    if report.get("status") == "gpu_fault":
        return f"the run stopped at a GPU fault: {report['fault']['summary']}"
    return f"no '{plan}' plan in the report"


def read_fx_plan(report, plan):
    """One plan's {"ms", "kernels"} (and "stepped_ms" and "graph_ms" where the run measured them) from a report of
    `fusion-cli run FILE --auto --json OUT` (load_fx_report), or {"error": why}. A time the run did not measure
    (graph_ms without --cuda-graph) is left out, never read as zero."""
    entry = plan_entry(report, plan)
    if entry is None:
        return {"error": _no_plan(report, plan)}
    got = {"ms": entry["total_ms"], "kernels": len(entry["kernels"])}
    # The plan timed with an event after each step, and replayed as a CUDA graph (--cuda-graph: the GPU's time).
    for extra in ("stepped_ms", "graph_ms"):
        if entry.get(extra) is not None:
            got[extra] = entry[extra]
    return got


CLOCK_KEYS = ("samples", "busy_samples", "sm_mhz_median", "sm_mhz_min", "sm_mhz_max", "held_back_by")


def read_fx_clocks(report):
    """The clocks fusion-cli's timing ran at (timing.gpu_clocks: both plans in interleaved rounds), in the
    harness's summary form (gpu_clocks.summarize), or None where the run did not read them."""
    c = report.get("timing", {}).get("gpu_clocks")
    if not c or not c.get("busy_samples"):
        return None
    return {k: c.get(k) for k in CLOCK_KEYS}


def fx_round(report):
    """One fusion-cli run's plans as a round: {"fx_unfused": ..., "fx_fused": ...}, each {"ms": [ms], "kernels": n,
    "steps": [what each step ran]} plus its optional times as one-element lists (kept in bench.json: the plan with
    an event after each step, and replayed as a CUDA graph), or {"error": why}. `report` is load_fx_report's."""
    out = {}
    clocks = read_fx_clocks(report)
    for key, plan in (("fx_unfused", "unfused"), ("fx_fused", "fused")):
        got = read_fx_plan(report, plan)
        if "error" in got:
            out[key] = {"error": got["error"]}
            continue
        out[key] = {"ms": [got["ms"]], "kernels": got["kernels"], "steps": [plan_steps(report, plan)],
                    "clocks": [clocks]}
        for extra in ("stepped_ms", "graph_ms"):
            if extra in got:
                out[key][extra] = [got[extra]]
    return out


def read_fx_round(path):
    """fx_round of the report at `path`; a file this harness does not read is both plans' error, naming it."""
    try:
        return fx_round(load_fx_report(path))
    except ReportError as e:
        return {key: {"error": str(e)} for key in ("fx_unfused", "fx_fused")}


def merge_fx_round(fx, one):
    """Adds one round's fusion-cli plans ({"fx_unfused": ..., "fx_fused": ...} as bench_fx gives them) to the
    rounds so far, in place: the times appended, every optional time included (a first version kept stepped_ms
    and dropped graph_ms here), an error kept once either round has one."""
    for key in fx:
        if "error" in one[key]:
            fx[key] = one[key]
        elif "error" not in fx[key]:
            fx[key]["ms"] += one[key]["ms"]
            fx[key]["kernels"] = one[key]["kernels"]
            for extra in ("steps", "stepped_ms", "graph_ms", "clocks"):
                if extra in one[key]:
                    fx[key].setdefault(extra, []).extend(one[key][extra])
    return fx


def bandwidth_fraction(min_bytes, ms, copy_bytes_per_s):
    """Minimum traffic over the measured time, as a fraction of device-to-device copy bandwidth."""
    if ms is None or ms <= 0 or not copy_bytes_per_s:
        return None
    return min_bytes / (ms * 1e-3) / copy_bytes_per_s


def first_ms(entry):
    ms = entry.get("ms") if isinstance(entry, dict) else None
    return ms[0] if isinstance(ms, list) and ms and ms[0] is not None else None


def _times(row, system, key="ms"):
    times = row.get(system, {}).get(key) if isinstance(row.get(system), dict) else None
    return times if isinstance(times, list) else None


def round_ratios(row, num, den, den_key="ms", num_key="ms"):
    """num / den for each round both measured (None where either is missing): ratios only within a round.
    den_key "queued_ms" takes the PyTorch side timed with its launches queued (bench.queued_ms); num_key
    "graph_ms" Fusion Explorer's plan replayed as a CUDA graph (both the GPU's time without the host's)."""
    a, b = _times(row, num, num_key), _times(row, den, den_key)
    if a is None or b is None:
        return []
    return [x / y if x and y else None for x, y in itertools.zip_longest(a, b)]


def derive(row, copy_bytes_per_s):
    """Adds the ratios fused / torch.compile and unfused / eager of each round ("ratio_fused_compile" keeps
    round 1's), the bandwidth fractions (memory-bound graphs only: a GEMM's time is set by FLOPs, so its fraction
    of copy bandwidth says nothing) and the run-to-run spread."""
    fused, compiled = first_ms(row.get("fx_fused")), first_ms(row.get("compile"))
    row["ratio_fused_compile"] = fused / compiled if fused and compiled else None
    row["ratios"] = {"fused_compile": round_ratios(row, "fx_fused", "compile"),
                     "unfused_eager": round_ratios(row, "fx_unfused", "eager"),
                     "fused_compile_queued": round_ratios(row, "fx_fused", "compile", "queued_ms"),
                     "unfused_eager_queued": round_ratios(row, "fx_unfused", "eager", "queued_ms"),
                     "fused_graph_compile_queued": round_ratios(row, "fx_fused", "compile", "queued_ms", "graph_ms")}
    # bw_fraction_same_bytes: the same against a copy that moves the sample's own minimum bytes
    # (bench.copy_bandwidth), timed under the same flush: the run's 1 GiB copy pays the flush's dirty lines over
    # 2 GiB of traffic, a 256 MiB kernel over 256 MiB, so against the big copy a small kernel looks slower than it
    # streams.
    same = row.get("copy_same_bytes_tb_s")
    for key, rate in (("bw_fraction", copy_bytes_per_s), ("bw_fraction_same_bytes", same * 1e12 if same else None)):
        row[key] = {s: None if row.get("has_contraction") else bandwidth_fraction(
            row["min_bytes"], first_ms(row.get(s)), rate) for s in SYSTEMS}
    spreads = []
    for s in SYSTEMS:
        ms = row.get(s, {}).get("ms") if isinstance(row.get(s), dict) else None
        if isinstance(ms, list) and len(ms) > 1 and all(m for m in ms):
            spreads.append((max(ms) - min(ms)) / min(ms))
    row["spread"] = max(spreads) if spreads else None
    return row


def _ms_cell(entry, key="ms"):
    if not isinstance(entry, dict) or not isinstance(entry.get(key), list) or not entry[key] or entry[key][0] is None:
        return NA
    ms = entry[key]
    text = f"{ms[0]:.3f}"
    return text + (f" ({ms[1]:.3f})" if len(ms) > 1 and ms[1] is not None else "")


def _k_cell(entry):
    k = entry.get("kernels") if isinstance(entry, dict) else None
    return str(k) if isinstance(k, int) else NA


def _f(value, fmt):
    return NA if value is None else format(value, fmt)


def _ratio_cell(ratios, fmt):
    if not ratios or ratios[0] is None:
        return NA
    text = format(ratios[0], fmt)
    return text + (f" ({format(ratios[1], fmt)})" if len(ratios) > 1 and ratios[1] is not None else "")


def table_rows(rows):
    header = ["sample", "min MiB"]
    for s in SYSTEMS:
        header += [f"{TITLES[s]} ms (run 2)", "k"]
    header += ["fused/compile (run 2)", "unfused/eager (run 2)", "torch.compile queued ms (run 2)",
               "fused/compile queued (run 2)", "bw eager", "bw compile", "bw FX unfused", "bw FX fused",
               "same-bytes copy TB/s", "bw* compile", "bw* FX fused", "spread"]
    body = []
    for r in rows:
        line = [r["name"], f"{r['min_bytes'] / 2**20:.1f}"]
        for s in SYSTEMS:
            line += [_ms_cell(r.get(s)), _k_cell(r.get(s))]
        bw = r.get("bw_fraction", {})
        same = r.get("bw_fraction_same_bytes") or {}
        ratios = r.get("ratios", {})
        line += [_ratio_cell(ratios.get("fused_compile"), ".3f"), _ratio_cell(ratios.get("unfused_eager"), ".2f"),
                 _ms_cell(r.get("compile"), "queued_ms"), _ratio_cell(ratios.get("fused_compile_queued"), ".3f"),
                 _f(bw.get("eager"), ".2f"), _f(bw.get("compile"), ".2f"), _f(bw.get("fx_unfused"), ".2f"),
                 _f(bw.get("fx_fused"), ".2f"), _f(r.get("copy_same_bytes_tb_s"), ".2f"),
                 _f(same.get("compile"), ".2f"), _f(same.get("fx_fused"), ".2f"),
                 NA if r.get("spread") is None else f"{100 * r['spread']:.1f}%"]
        body.append(line)
    return header, body


def text_table(rows):
    header, body = table_rows(rows)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    fmt = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(b) for b in body])


def _kernels(row, system):
    k = row.get(system, {}).get("kernels") if isinstance(row.get(system), dict) else None
    return k if isinstance(k, int) else None


def _every_round(limit, key, difference=None, den_key="ms"):
    """A check: the row's ratios `key` at most `limit` in every round; None when a round lacks the number.
    With `difference` = (num, den), the numbers also give num - den in each round in microseconds (den's times
    under den_key), so that a miss of a few tenths of a microsecond reads as the tie it is ("1.004 / 1.002
    (+0.7 / +0.4 us)")."""
    def check(r):
        ratios = r.get("ratios", {}).get(key) or []
        if not ratios or any(x is None for x in ratios):
            return None
        text = " / ".join(f"{x:.3f}" for x in ratios)
        if difference:
            num, den = _times(r, difference[0]), _times(r, difference[1], den_key)
            if num is not None and den is not None and len(num) == len(den) == len(ratios):
                text += " (" + " / ".join(f"{(a - b) * 1e3:+.1f}" for a, b in zip(num, den)) + " us)"
        return all(x <= limit for x in ratios), text
    return check


def _copy_bandwidth(r, key="bw_fraction"):
    bw = (r.get(key) or {}).get("fx_fused")
    return None if bw is None else (bw >= 0.95, f"{bw:.3f}")


def _fewer_kernels_and_faster(r):
    timed = _every_round(1.0, "fused_compile", ("fx_fused", "compile"))(r)
    fx, tc = _kernels(r, "fx_fused"), _kernels(r, "compile")
    if timed is None or fx is None or tc is None:
        return None
    return timed[0] and fx < tc, f"{timed[1]}, {fx} vs {tc} kernels"


# The benchmark's targets (docs/benchmarks.md): which samples each covers, and its check, which returns
# (met, numbers) or None when the sample lacks a number it needs (a failed or skipped column).
TARGETS = (
    ("fused / torch.compile <= 1.0", lambda r: True, _every_round(1.0, "fused_compile", ("fx_fused", "compile"))),
    ("unfused / eager <= 1.2", lambda r: True, _every_round(1.2, "unfused_eager")),
    # The same comparisons with PyTorch's host time taken out (bench.queued_ms): what each side's kernels take.
    ("fused / torch.compile queued <= 1.0", lambda r: True,
     _every_round(1.0, "fused_compile_queued", ("fx_fused", "compile"), "queued_ms")),
    ("unfused / eager queued <= 1.2", lambda r: True, _every_round(1.2, "unfused_eager_queued")),
    ("elementwise/reduction: FX fused >= 0.95 of copy bandwidth (round 1)", lambda r: not r.get("has_contraction"),
     _copy_bandwidth),
    ("contraction: FX fused <= torch.compile with fewer kernels", lambda r: r.get("has_contraction"),
     _fewer_kernels_and_faster),
    # And with ours taken out too: the fused plan replayed as a CUDA graph (fusion-cli run --cuda-graph).
    ("fused as a CUDA graph / torch.compile queued <= 1.0", lambda r: True,
     _every_round(1.0, "fused_graph_compile_queued")),
    # The bandwidth target again, against a copy of the sample's own bytes under the same flush.
    ("elementwise/reduction: FX fused >= 0.95 of a copy of the same bytes (round 1)",
     lambda r: not r.get("has_contraction"), lambda r: _copy_bandwidth(r, "bw_fraction_same_bytes")),
)


def targets(rows):
    """One line per target: on how many of its samples it is met (in every round), and the others with their
    numbers, so a miss is never hidden in a count."""
    lines = []
    for title, applies, check in TARGETS:
        met, missed, unmeasured = 0, [], []
        covered = [r for r in rows if applies(r)]
        for r in covered:
            result = check(r)
            if result is None:
                unmeasured.append(r["name"])
            elif result[0]:
                met += 1
            else:
                missed.append(f"{r['name']} {result[1]}")
        if not covered:
            lines.append(f"{title}: no sample of this run")
            continue
        text = f"{title}: met on {met} of {len(covered)}"
        if missed:
            text += "; not met: " + ", ".join(missed)
        if unmeasured:
            text += "; not measured: " + ", ".join(unmeasured)
        lines.append(text)
    return lines


# A version is called host-bound when its plain time exceeds its GPU-only time by this much in a round.
HOST_BOUND = 1.15


# Each version whose plain time held the host's (its kernels waiting for launches) against its GPU-only time: the
# version, the key of that time, and how the two are named in the note.
HOST_TIMES = (("eager", "queued_ms", "in do_bench", "with its launches queued"),
              ("compile", "queued_ms", "in do_bench", "with its launches queued"),
              ("fx_unfused", "graph_ms", "launched step by step",
               "replayed as a CUDA graph (its library calls' host time outran the GPU)"),
              ("fx_fused", "graph_ms", "launched step by step",
               "replayed as a CUDA graph (its library calls' host time outran the GPU)"))


# The tuner's and cuBLASLt's search's own medians in a step's path ("0.1815 ms") change in every run; what the
# run chose is the rest of it.
_TIMES = re.compile(r"\d+(?:\.\d+)? ms")


def changed_choices(row):
    """Our plans' steps that ran another layout or algorithm in a later round than in round 1 (their times aside):
    each round is a `fusion-cli run` of its own, tuning and cuBLASLt's search included, so where a plan's time
    moved between rounds this says whether it ran other code."""
    out = []
    for s in ("fx_unfused", "fx_fused"):
        rounds = row.get(s, {}).get("steps") if isinstance(row.get(s), dict) else None
        if not isinstance(rounds, list) or len(rounds) < 2:
            continue
        first = rounds[0]
        for i, later in enumerate(rounds[1:], start=2):
            if len(later) != len(first):
                out.append(f"{row['name']} {TITLES[s]}: {len(first)} steps in round 1, {len(later)} in round {i}")
                continue
            for a, b in zip(first, later):
                if _TIMES.sub("", str(a.get("path"))) != _TIMES.sub("", str(b.get("path"))):
                    out.append(f"{row['name']} {TITLES[s]}: step {a.get('name')} ran another choice in round {i}: "
                               f"round 1 {_f(a.get('ms'), '.4f')} ms with {a.get('path')}; round {i} "
                               f"{_f(b.get('ms'), '.4f')} ms with {b.get('path')}")
    return out


def _count_changed_choices(row):
    """changed_choices in one line per plan, for the console (bench.md names each step)."""
    out, lines = [], changed_choices(row)
    for s in ("fx_unfused", "fx_fused"):
        n = sum(1 for line in lines if line.startswith(f"{row['name']} {TITLES[s]}: "))
        if n:
            out.append(f"{row['name']} {TITLES[s]}: {n} step(s) ran another layout or algorithm in a later round "
                       "than in round 1 (bench.md names them)")
    return out


def notes(rows, each_step=True):
    """Errors; each version whose plain time held the host's time (PyTorch's kernels waiting for Python, our
    library calls' host time): there its plain ratio misleads, and the GPU-only one (queued, CUDA graph) is the
    one to read; and each step of our plans that ran another layout or algorithm from one round to the next (with
    each_step False, their count per plan)."""
    out = []
    for r in rows:
        for s in SYSTEMS:
            err = r.get(s, {}).get("error") if isinstance(r.get(s), dict) else None
            if err:
                out.append(f"{r['name']} {TITLES[s]}: {err}")
        for s, key, plain, gpu_only in HOST_TIMES:
            ms, gpu = _times(r, s), _times(r, s, key)
            if not ms or not gpu:
                continue
            pairs = [(a, b) for a, b in zip(ms, gpu) if a and b]
            if any(a > HOST_BOUND * b for a, b in pairs):
                times = " / ".join(f"{a:.3f}" for a, _ in pairs)
                gpu_times = " / ".join(f"{b:.3f}" for _, b in pairs)
                out.append(f"{r['name']} {TITLES[s]}: host-bound: {times} ms {plain}, {gpu_times} ms {gpu_only}")
        out += changed_choices(r) if each_step else _count_changed_choices(r)
        out += clock_notes(r)
    return out


# Below this spread of the versions' median SM clocks, a memory-bound sample's clock note is left out.
CLOCK_NOTE_SPREAD = 0.02


def clock_notes(row):
    """What the SM clock was while each version was timed, round by round (median MHz of each round's samples),
    and what held it back: for every sample with a contraction (power-limited GEMMs), and for the others where
    the versions' clocks differ by more than CLOCK_NOTE_SPREAD. Empty where no clocks were read."""
    parts, medians = [], []
    for s, key in (("eager", "clocks"), ("compile", "clocks"), ("compile", "queued_clocks"),
                   ("fx_fused", "clocks")):
        entry = row.get(s)
        rounds = entry.get(key) if isinstance(entry, dict) else None
        if not isinstance(rounds, list) or not any(isinstance(c, dict) and c.get("sm_mhz_median") for c in rounds):
            continue
        per_round = [str(c["sm_mhz_median"]) if isinstance(c, dict) and c.get("sm_mhz_median") else "n/a"
                     for c in rounds]
        medians += [c["sm_mhz_median"] for c in rounds if isinstance(c, dict) and c.get("sm_mhz_median")]
        why = sorted({w for c in rounds if isinstance(c, dict) for w in c.get("held_back_by") or []})
        title = "FX (both plans)" if s == "fx_fused" else TITLES[s] + (" queued" if key == "queued_clocks" else "")
        parts.append(f"{title} {' / '.join(per_round)}" + (f" ({', '.join(why)})" if why else ""))
    if not parts:
        return []
    if not row.get("has_contraction") and max(medians) <= (1 + CLOCK_NOTE_SPREAD) * min(medians):
        return []
    return [f"{row['name']} SM clock, median MHz per round: " + "; ".join(parts)]


SAMPLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sample_graphs")


def samples_not_in(rows, sample_dir=SAMPLE_DIR):
    """The sample graphs (by file name) that no row measured: a report of a subset says which are missing."""
    have = {os.path.splitext(os.path.basename(r.get("file") or r["name"]))[0] for r in rows}
    every = sorted(os.path.splitext(f)[0] for f in os.listdir(sample_dir) if f.endswith(".json")) \
        if os.path.isdir(sample_dir) else []
    return [n for n in every if n not in have]


def markdown(report):
    header, body = table_rows(report["samples"])
    parts = report.get("parts") or []
    if len(parts) > 1:
        copy = "; ".join(f"{(p.get('copy_tb_s') or 0):.2f} TB/s in run {i} ({len(p['samples'])} samples: "
                         f"{', '.join(p['samples'])})" for i, p in enumerate(parts, start=1))
        copy = (f"merged from {len(parts)} runs of bench.py on one device, each row from one run; device-to-device "
                f"copy {copy} (read + write; each row's bw divides by its own run's)")
    else:
        copy = f"device-to-device copy {report.get('copy_tb_s') or 0:.2f} TB/s (read + write)"
    lines = [f"# Fusion Explorer vs PyTorch on {report.get('device', 'unknown device')}", "",
             f"torch {report.get('torch')}, triton {report.get('triton')}; {copy}. Timing: "
             f"{report.get('timing', 'medians of triton.testing.do_bench')}. The "
             "value in parentheses is a second run of the same code, `spread` the largest difference between "
             "the two runs. `k` = CUDA kernels per call. `queued`: PyTorch's runs queued behind a spin kernel "
             "(bench.queued_ms), the GPU's time without the host's (where the two differ, the "
             "notes name the sample). `bw` = minimum bytes (inputs read once, outputs "
             "written once) per second as a fraction of copy bandwidth, for graphs without a contraction; `bw*` "
             "the same against a copy that moves the sample's own minimum bytes (half read, half written) under "
             "the same flush (`same-bytes copy`): the flush leaves about 50 MiB of dirty lines in the L2, which "
             "cost a kernel of 256 MiB more of its time than the 1 GiB copy. "
             "Ratios are taken within a round; fused/compile < 1: Fusion Explorer's fused plan is faster than "
             "torch.compile.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(b) + " |" for b in body]
    lines += ["", "Targets (met when they hold in every round):", ""] + [f"- {t}" for t in targets(report["samples"])]
    left_out = samples_not_in(report["samples"])
    if left_out:
        lines += ["", f"Not in this report: {len(left_out)} of the samples in sample_graphs/ ({', '.join(left_out)})."]
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


def merge(reports):
    """One report from several bench.py runs (e.g. `--group elementwise` and `--group contraction`, one GPU call
    each): their samples side by side, each row as its run derived it (its bandwidth fractions divide by the copy
    bandwidth its own run measured). The runs must name the same device, torch and triton; a sample in two runs
    is refused, since its rows would be two measurements of one thing. `parts` keeps each run's samples, copy
    bandwidth and seconds."""
    if not reports:
        raise ValueError("merge: no reports")
    first = reports[0]
    for i, r in enumerate(reports[1:], start=2):
        for key in ("device", "torch", "triton"):
            if r.get(key) != first.get(key):
                raise ValueError(f"merge: report {i} has {key} {r.get(key)!r}, report 1 {first.get(key)!r}")
    seen = {}
    for i, r in enumerate(reports, start=1):
        for s in r.get("samples", []):
            if s["name"] in seen:
                raise ValueError(f"merge: sample {s['name']} is in report {seen[s['name']]} and report {i}")
            seen[s["name"]] = i
    parts = [{"samples": [s["name"] for s in r.get("samples", [])], "copy_tb_s": r.get("copy_tb_s"),
              "seconds": r.get("seconds")} for r in reports]
    merged = {k: first[k] for k in ("device", "torch", "triton", "timing", "fusion_cli") if k in first}
    merged.update({"copy_tb_s": first.get("copy_tb_s"), "seconds": sum(r.get("seconds") or 0 for r in reports),
                   "samples": [s for r in reports for s in r.get("samples", [])], "parts": parts})
    return merged


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="bench.py's reports: `merge` writes one bench.json and bench.md "
                                             "from the reports of several runs (one per --group)")
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("merge", help="merge bench.json files of one device into one report")
    m.add_argument("reports", nargs="+", help="bench.json files")
    m.add_argument("--out", required=True, help="directory for the merged bench.json and bench.md")
    args = ap.parse_args(argv)
    reports = []
    for path in args.reports:
        try:
            with open(path, encoding="utf-8") as f:
                reports.append(json.load(f))
        except (OSError, ValueError) as e:
            print(f"bench_report: {path}: {e}")
            return 2
    try:
        merged = merge(reports)
    except ValueError as e:
        print(f"bench_report: {e}")
        return 2
    write_reports(merged, args.out)
    print(f"bench_report: {len(merged['samples'])} samples from {len(reports)} reports; wrote {args.out}/bench.json "
          "and bench.md")
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
