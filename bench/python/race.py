#!/usr/bin/env python3
"""Fusion Explorer's generated kernel against torch.compile's, in one process, run by run after the same flush.

paired.py times each side in its own process, each after its own 256 MB flush allocation, and the flush's own
state moves a memory-bound kernel by 0.3-0.6% (bench/microbench/flush_placement.cu, docs/measurement.md): a
gap below that between two kernels at copy bandwidth is at the floor of such pairs. Here both sides run in
this process on the same input tensors, each run after a memset of the same flush buffer, interleaved run by
run (the order rotating from round to round), with the stream held by a spin while the host enqueues a block
of rounds, so neither side's launch cost shows. Each block of rounds gives each contender its median; each
block's ratio ours / torch.compile is one observation, summarised as paired.py's pairs are (median, sign-test
interval, verdict; bench/python/pairs.py). Every layout gets its own row; which of them the run's tuner keeps
is on `fusion-cli run`'s kernel line, and the best row, picked after the race, carries no correction for that
choice.

Our side is the fused plan's kernel as `fusion-cli codegen --auto --json` writes it, in every layout the run
would time (planned with the cost-model preset `fusion-cli run` picks for this GPU), each compiled here with
NVRTC (the executor's options; the report gives NVRTC's version) and launched through the CUDA driver with
its parameters in the executor's order (inputs, then outputs). Each layout's outputs are checked against the
float64 reference first (crosscheck.py's check; a mismatch is a failure).

The fused plan as `fusion-cli run` tunes it races too, whatever it holds (cuBLASLt and cuDNN calls, several
kernels): libfusion_harness (bench/harness, built next to fusion-cli) runs the executor in this process. It takes
torch.compile's inputs (stacked and folded weights are made from them), tunes the layouts and library calls with
the options the PyTorch harness gives `fusion-cli run` (the flush, 25 ms of warm-up, 100 ms of timing), verifies
both plans, and its fused plan's outputs are checked against the float64 reference like the layouts'. Everything
then runs on the harness's stream. Its row is the honest one for the tuner's choice; the layouts' rows show what
the choice was between. Without the library only samples whose fused plan is one generated kernel race.

    python3 bench/python/race.py --samples relu_mul_add softmax [--blocks 15] [--rounds 40] [--cli PATH]
    python3 bench/python/race.py --samples exp_two_consumers --variant bench/microbench/race_variants/exp_ex2.cu:2
    python3 bench/python/race.py --samples relu_mul_add --placement per-block

--placement per-block gives every contender new output memory every block (torch.compile's earlier outputs are
held, so its calls allocate others; the layouts and the tuned plan write new tensors, the plan through
fx_harness_bind_outputs): where the outputs lie moves a kernel's time too, and with it the blocks' ratios sample
placements rather than one. Where one of the plan's outputs cannot be bound (a part of a horizontal GEMM's
packed output), the plan keeps all its own output buffers, and the report says so.

Writes race.json and race.md to --out (default $OUT, else ./bench-out)."""
import argparse
import ctypes
import ctypes.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pairs  # noqa: E402  (no torch: the CPU tests import this module's pure functions)

FLUSH_BYTES = 256 * 2**20  # do_bench's cache flush
FLUSH_KINDS = {"fill": "do_bench's zero_(), a fill kernel", "memset": "the executor's cudaMemsetAsync"}
WARMUP_MS = 25.0           # do_bench's warm-up, per contender
TUNED_PLAN = "fused plan as fusion-cli run tunes it"  # the row of the plan libfusion_harness runs


# ---- the bundle and the statistics (pure Python; bench/python/test_race.py) ----

def one_kernel(bundle):
    """(kernel, None) when the fused plan of `fusion-cli codegen --json` is one generated kernel, else
    (None, the reason)."""
    if bundle.get("format") != "fusion-explorer/kernels":
        return None, f"not a fusion-explorer/kernels file (format {bundle.get('format')!r})"
    groups = bundle.get("groups", [])
    launched = [g for g in groups if g.get("kernels") or "not launched" not in g.get("none", "")]
    library = [g for g in launched if not g.get("kernels")]
    kernels = [k for g in launched for k in g.get("kernels", [])]
    if library:
        return None, (f"{len(library)} of its {len(launched)} groups run no generated kernel "
                      f"({library[0]['id']}: {library[0].get('none', '')})")
    if len(kernels) != 1:
        return None, f"its fused plan has {len(kernels)} generated kernels; a race takes one"
    return kernels[0], None


def device_preset(gpu_name):
    """The cost-model preset `fusion-cli run` picks for this GPU (app/cli/plan_source.cpp: default_device_for), so that
    codegen plans the same fusion the run executes."""
    if "H200" in gpu_name:
        return "h200"
    if "A100" in gpu_name:
        return "a100"
    return "h100"


def nvrtc_options(bundle_options, major, minor):
    """The bundle's NVRTC options (fusion-cli's, for sm_90) with the architecture of this GPU."""
    rest = [o for o in (bundle_options or ["-std=c++17", "--generate-line-info"]) if not o.startswith("--gpu-arch")]
    return [f"--gpu-architecture=sm_{major}{minor}"] + rest


def parse_variant(text):
    """--variant FILE[:LAYOUT | :GRIDxBLOCK] -> (label, file, launch): a hand-edited source of the sample's kernel
    (the same entry point and parameters), launched with layout LAYOUT's grid and block (launch = its index from
    0; default the first layout) or with a grid and block of its own (launch = (grid, block)), e.g. Triton's
    1024 elements per block of 128 threads for a source written for them."""
    head, _, tail = text.rpartition(":")
    launch = 0
    if head and re.fullmatch(r"\d+", tail):
        launch = int(tail) - 1
        if launch < 0:
            raise ValueError(f"--variant {text}: layouts count from 1")
    elif head and re.fullmatch(r"\d+x\d+", tail):
        grid, block = (int(v) for v in tail.split("x"))
        if grid < 1 or not 1 <= block <= 1024:
            raise ValueError(f"--variant {text}: a grid of at least 1 block of 1 to 1024 threads")
        launch = (grid, block)
    else:
        head = text
    return os.path.splitext(os.path.basename(head))[0], head, launch


def with_variants(kernel, variants, read=lambda p: open(p, encoding="utf-8").read()):
    """The kernel's layouts followed by each variant as a layout of its own (label, source, and the grid and block
    of the layout it names or its own)."""
    layouts = list(kernel["layouts"])
    for label, path, launch in variants:
        if isinstance(launch, tuple):
            grid, block = launch
            how = f"grid {grid}, block {block}"
        elif launch >= len(kernel["layouts"]):
            raise ValueError(f"--variant {path}: the kernel has {len(kernel['layouts'])} layouts, not {launch + 1}")
        else:
            grid, block = kernel["layouts"][launch]["grid"], kernel["layouts"][launch]["block"]
            how = f"grid and block of layout {launch + 1}"
        layouts.append({"description": f"{label} (variant, {how})", "grid": grid, "block": block,
                        "source": read(path)})
    return layouts


def round_order(r, n):
    """The contenders' order in round r: rotated by one each round, so each runs in every position equally."""
    return [(r + i) % n for i in range(n)]


def summarize(names, blocks):
    """blocks: [[median ms of contender 0 (torch.compile), of 1, ...], ...]. For each of ours (1..): its block
    ratios to torch.compile's, their median, interval and verdict, as paired.py's."""
    out = {"compile_ms_median": pairs.median([b[0] for b in blocks]), "layouts": []}
    for c in range(1, len(names)):
        ratios = [b[c] / b[0] for b in blocks if b[0] > 0]
        interval = pairs.median_interval(ratios) if ratios else None
        out["layouts"].append({
            "layout": names[c], "fused_ms_median": pairs.median([b[c] for b in blocks]), "ratios": ratios,
            "ratio_median": pairs.median(ratios), "interval": list(interval[:2]) if interval else None,
            "coverage": interval[2] if interval else None,
            "fused_faster_in": sum(r < 1.0 for r in ratios),
            "verdict": pairs.verdict(*(interval[:2] if interval else (None, None)))})
    return out


def markdown(report):
    lines = [f"One-process races on {report['device']} (torch {report['torch']}, triton {report['triton']}, "
             f"NVRTC {report.get('nvrtc', '?')}): "
             f"{report['blocks']} blocks of {report['rounds']} rounds, every run after the same 256 MB flush ("
             + " or ".join(FLUSH_KINDS[k] for k in report.get("flush", ["fill"]))
             + "), the contenders interleaved run by run (bench/python/race.py)"
             + ("; every contender's outputs newly allocated every block (torch.compile's, the layouts', and the "
                "tuned plan's, bound through fx_harness_bind_outputs)." if report.get("placement") == "per-block"
                else "."), "",
             "| sample | layout | torch.compile ms | FX ms | FX / compile, median of blocks | interval | coverage "
             "| FX faster in | verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for s in report["samples"]:
        if s.get("skipped") or s.get("error"):
            lines.append(f"| {s['name']} | {s.get('skipped') or s.get('error')} | | | | | | | |")
            continue
        rows = [(lay, "", s["compile_ms_median"]) for lay in s["layouts"]]
        for kind, other in s.get("other_flushes", {}).items():
            rows += [(lay, f" ({kind} flush)", other["compile_ms_median"]) for lay in other["layouts"]]
        for lay, after, compile_ms in rows:
            iv, cov = lay["interval"], lay["coverage"]
            interval = "-" if not iv else f"{iv[0]:.4f} - {iv[1]:.4f}"
            coverage = "-" if cov is None else f"{cov:.1%}"
            lines.append(
                f"| {s['name']} | {lay['layout']}{after} | {compile_ms:.4f} | {lay['fused_ms_median']:.4f} | "
                f"{lay['ratio_median']:.4f} | {interval} | {coverage} | "
                f"{lay['fused_faster_in']} of {len(lay['ratios'])} | {lay['verdict']} |")
    notes = [f"- {s['name']}: {s['plan_placement']}" for s in report["samples"] if s.get("plan_placement")]
    if notes:
        lines += ["", "Where the tuned plan's outputs could not be bound:"] + notes
    return "\n".join(lines) + "\n"


# ---- NVRTC and the driver, through ctypes (the CUDA toolkit's or PyTorch's libraries) ----

def _load(names):
    errors = []
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            errors.append(str(e))
    raise RuntimeError("cannot load any of " + ", ".join(names) + ": " + "; ".join(errors))


class Cuda:
    """NVRTC (compile) and the CUDA driver (load, launch) through ctypes."""

    def __init__(self):
        self.nvrtc = _load([ctypes.util.find_library("nvrtc") or "libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so",
                            "libnvrtc.so.13", "libnvrtc.so.12"])
        self.nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p
        self._cu_lib = None  # the driver, loaded on first use: compiling needs none (bench/python/test_race.py)

    @property
    def cu(self):
        if self._cu_lib is None:
            self._cu_lib = _load(["libcuda.so.1", "libcuda.so"])
            self._cu_lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
                ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        return self._cu_lib

    def _nv(self, status, what, prog=None):
        if status != 0:
            log = ""
            if prog is not None:
                size = ctypes.c_size_t()
                self.nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
                buf = ctypes.create_string_buffer(size.value)
                self.nvrtc.nvrtcGetProgramLog(prog, buf)
                log = buf.value.decode(errors="replace")
            raise RuntimeError(f"NVRTC {what}: {self.nvrtc.nvrtcGetErrorString(status).decode()}\n{log}")

    def _cu(self, status, what):
        if status != 0:
            msg = ctypes.c_char_p()
            self.cu.cuGetErrorString(status, ctypes.byref(msg))
            raise RuntimeError(f"CUDA driver {what}: {msg.value.decode() if msg.value else status}")

    def version(self):
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._nv(self.nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "version")
        return f"{major.value}.{minor.value}"

    def compile(self, source, name, options):
        prog = ctypes.c_void_p()
        self._nv(self.nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), f"{name}.cu".encode(), 0,
                                               None, None), "create " + name)
        try:
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            self._nv(self.nvrtc.nvrtcCompileProgram(prog, len(options), opts), "compile " + name, prog)
            size = ctypes.c_size_t()
            self._nv(self.nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "CUBIN size")
            cubin = ctypes.create_string_buffer(size.value)
            self._nv(self.nvrtc.nvrtcGetCUBIN(prog, cubin), "CUBIN")
            return cubin
        finally:
            self.nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))

    def function(self, cubin, name):
        module, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self._cu(self.cu.cuModuleLoadData(ctypes.byref(module), cubin), "load " + name)
        self._cu(self.cu.cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), "find " + name)
        return fn

    def launcher(self, fn, grid, block, pointers, stream):
        """A call that launches fn on `stream` with one device pointer per parameter."""
        values = [ctypes.c_void_p(p) for p in pointers]
        params = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        handle = ctypes.c_void_p(stream)

        def launch():
            self._cu(self.cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, handle, params, None), "launch")
        launch.keep = (values, params)  # alive as long as the launcher
        return launch


class Harness:
    """libfusion_harness (bench/harness/fusion_harness.h) through ctypes: the fused plan as `fusion-cli run` tunes
    it, library calls included, run on the caller's inputs."""

    def __init__(self, path):
        lib = self.lib = ctypes.CDLL(path)
        lib.fx_harness_last_error.restype = ctypes.c_char_p
        lib.fx_harness_open.restype = ctypes.c_void_p
        lib.fx_harness_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.fx_harness_prepare.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                           ctypes.POINTER(ctypes.c_void_p)]
        lib.fx_harness_describe.restype = ctypes.c_char_p
        lib.fx_harness_describe.argtypes = [ctypes.c_void_p]
        lib.fx_harness_stream.restype = ctypes.c_void_p
        lib.fx_harness_stream.argtypes = [ctypes.c_void_p]
        lib.fx_harness_enqueue.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.fx_harness_copy_value.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
                                              ctypes.c_size_t]
        lib.fx_harness_bind_outputs.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                                ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_void_p)]
        lib.fx_harness_close.argtypes = [ctypes.c_void_p]

    def fail(self):
        raise RuntimeError(self.lib.fx_harness_last_error().decode(errors="replace").strip())

    def open(self, path, options):
        handle = self.lib.fx_harness_open(path.encode(), json.dumps(options).encode())
        if not handle:
            self.fail()
        return HarnessPlan(self, handle)


class HarnessPlan:
    """One graph's plans in the harness; close() frees them."""

    def __init__(self, harness, handle):
        self.h, self.lib, self.handle = harness, harness.lib, handle

    @staticmethod
    def _named(tensors):
        """{name: tensor} as the C ABI's count, names and device pointers."""
        names = (ctypes.c_char_p * len(tensors))(*[n.encode() for n in tensors])
        pointers = (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors.values()])
        return len(tensors), names, pointers

    def prepare(self, inputs):
        """inputs: {name: contiguous CUDA tensor}; copied in, layouts tuned, both plans verified."""
        if self.lib.fx_harness_prepare(self.handle, *self._named(inputs)) != 0:
            self.h.fail()

    def describe(self):
        text = self.lib.fx_harness_describe(self.handle)
        if text is None:
            self.h.fail()
        return json.loads(text)

    def stream(self):
        return self.lib.fx_harness_stream(self.handle)

    def launcher(self, plan):
        def launch():
            if self.lib.fx_harness_enqueue(self.handle, plan) != 0:
                self.h.fail()
        return launch

    def bind(self, plan, outputs):
        """outputs: {name: contiguous CUDA tensor}; the plan writes those outputs there from now on ({}: its own
        buffers again)."""
        if self.lib.fx_harness_bind_outputs(self.handle, plan, *self._named(outputs)) != 0:
            self.h.fail()

    def copy(self, plan, name, tensor):
        nbytes = tensor.numel() * tensor.element_size()
        if self.lib.fx_harness_copy_value(self.handle, plan, name.encode(), tensor.data_ptr(), nbytes) != 0:
            self.h.fail()

    def close(self):
        if self.handle:
            self.lib.fx_harness_close(self.handle)
            self.handle = None


def find_harness(explicit, cli):
    """libfusion_harness.so: --harness, else $FX_HARNESS, else the one built next to fusion-cli (None if none)."""
    if explicit:
        return explicit
    if os.environ.get("FX_HARNESS"):
        return os.environ["FX_HARNESS"]
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(cli))))  # build/app/cli/fusion-cli
    path = os.path.join(build, "bench", "harness", "libfusion_harness.so")
    return path if os.path.exists(path) else None


def plan_label(steps):
    """The race's name for the fused plan as the run tunes it: its steps and what each kept."""
    if len(steps) == 1:  # what it kept, without the times behind the choice (the report keeps the whole path)
        kept = re.split(r": |; ", steps[0]["path"], maxsplit=1)[0] or steps[0]["kind"]
        return f"{TUNED_PLAN} ({kept})"
    return f"{TUNED_PLAN} ({len(steps)} steps)"


# ---- the race ----

def race_sample(cli, path, blocks, rounds, cuda, torch, bench, crosscheck, fx_torch, variants=(), placement="fixed",
                harness=None, flushes=("fill",)):
    graph = fx_torch.load_graph(path)
    entry = {"name": graph.name, "file": os.path.relpath(path)}
    device = device_preset(torch.cuda.get_device_name())
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "kernels.json")
        proc = subprocess.run([cli, "codegen", path, "--auto", "--device", device, "--json", out], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            entry["error"] = f"fusion-cli codegen exited {proc.returncode}: {proc.stderr.strip()[:300]}"
            return entry
        with open(out, encoding="utf-8") as f:
            bundle = json.load(f)
    kernel, why = one_kernel(bundle)
    if kernel is None and harness is None:
        entry["skipped"] = "not raced: " + why + " (and no libfusion_harness to run the whole plan)"
        return entry
    plan = None
    if harness is not None:
        try:  # the run's options under the PyTorch harness: do_bench's flush and times (bench.fusion_cli_command)
            plan = harness.open(path, {"device": device, "auto": True, "cold_l2": True,
                                       "warmup_ms": bench.DO_BENCH_WARMUP_MS, "repeat_ms": bench.DO_BENCH_REP_MS,
                                       "rest_ms": bench._REST["s"] * 1e3})
        except RuntimeError as e:
            entry["plan_error"] = str(e)
            if kernel is None:
                entry["skipped"] = f"not raced: {why}, and the harness cannot run the plan: {e}"
                return entry
    try:
        # Everything on the harness's stream when there is one: its plan launches go there.
        stream = torch.cuda.ExternalStream(plan.stream()) if plan else torch.cuda.current_stream()
        with torch.cuda.stream(stream):
            return race_on_stream(entry, graph, bundle, kernel, plan, blocks, rounds, cuda, torch, bench, crosscheck,
                                  variants, placement, flushes)
    finally:
        if plan:
            # Nothing of torch's may still run on the harness's stream when it is destroyed, and the tensors made
            # on it go back to the cache first.
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            plan.close()


def race_on_stream(entry, graph, bundle, kernel, plan, blocks, rounds, cuda, torch, bench, crosscheck, variants,
                   placement, flushes=("fill",)):
    prep = bench.prepare_torch(graph)
    if "error" in prep["compile"]:
        entry["error"] = "torch.compile: " + prep["compile"]["error"]
        return entry
    compiled, inputs = prep["compile"]["call"], prep["compile"]["inputs"]
    expected = compiled(inputs)
    torch.cuda.synchronize()
    written = list(kernel["outputs"]) if kernel else list(expected)
    missing = [name for name in written if name not in expected]
    if missing:
        entry["skipped"] = f"not raced: the kernel writes {missing}, which the graph does not output"
        return entry
    # Contiguous, as the executor's buffers (a torch output may be a strided view, e.g. of a transpose).
    outputs = {name: torch.empty(tuple(expected[name].shape), dtype=expected[name].dtype, device="cuda")
               for name in written}
    stream = torch.cuda.current_stream().cuda_stream
    major, minor = torch.cuda.get_device_capability()
    options = nvrtc_options(bundle.get("nvrtc_options"), major, minor)
    functions = []  # (function, grid, block) of each layout

    def our_calls(outs):
        pointers = [inputs[n].data_ptr() for n in kernel["inputs"]] + [outs[n].data_ptr() for n in kernel["outputs"]]
        return [cuda.launcher(fn, grid, block, pointers, stream) for fn, grid, block in functions]

    names = ["torch.compile"]
    results_plan = {}  # the plan's verified outputs
    results = {}  # each contender's outputs, checked together: the float64 reference is computed once
    for i, layout in enumerate(with_variants(kernel, variants) if kernel else []):
        functions.append((cuda.function(cuda.compile(layout["source"], kernel["name"], options), kernel["name"]),
                          layout["grid"], layout["block"]))
        for o in outputs.values():
            o.fill_(float("nan") if o.is_floating_point() else 0)
        our_calls(outputs)[i]()
        torch.cuda.synchronize()
        results[f"layout {i + 1}: {layout['description']}"] = {n: outputs[n].clone() for n in outputs}
        names.append(layout["description"] or f"layout {i + 1}")
    if plan:
        try:
            given = {name: t.contiguous() for name, t in inputs.items()}
            sizes = {i["name"]: i["bytes"] for i in plan.describe()["inputs"]}
            wrong = [f"{n}: {t.numel() * t.element_size()} bytes, not {sizes.get(n)}" for n, t in given.items()
                     if sizes.get(n) != t.numel() * t.element_size()]
            if wrong:
                raise RuntimeError("torch.compile's inputs do not match the graph's: " + "; ".join(wrong))
            plan.prepare(given)
            del given
            steps = plan.describe()["plans"]["fused"]
            produced = {name: torch.empty_like(outputs[name]) for name in outputs}
            for name, t in produced.items():
                plan.copy(1, name, t)
            entry["plan"] = steps
            names.append(plan_label(steps))
            results[names[-1]] = produced
            results_plan = produced
        except RuntimeError as e:  # the layouts still race; the plan's failure is named
            entry["plan_error"] = str(e)
            plan = None
            if not kernel:
                entry["error"] = f"the harness could not run the plan: {e}"
                return entry
    report = crosscheck.Report(echo=True)
    crosscheck.check(graph, inputs, results, report, plans=list(results))
    del results
    entry["checks"] = report.lines
    if report.failures:
        entry["error"] = f"{report.failures} output check(s) failed: " + "; ".join(
            line for line in report.lines if line.startswith("FAIL"))
        return entry
    if report.skips:  # a kernel whose outputs were not compared is not raced
        entry["skipped"] = "not raced: " + "; ".join(line for line in report.lines if line.startswith("SKIP"))
        return entry
    if kernel:
        entry["kernel"] = kernel["name"]
    entry["placement"] = placement
    held = [expected]  # outputs kept alive, so that a new block's outputs lie elsewhere
    plan_calls = [plan.launcher(1)] if plan else []
    bound = {}  # the plan's outputs in the last block, written where the plan was bound
    if plan and placement == "per-block":
        try:
            plan.bind(1, {name: torch.empty_like(outputs[name]) for name in outputs})
            plan.bind(1, {})
        except RuntimeError as e:  # e.g. a part of a horizontal GEMM's packed output
            entry["plan_placement"] = f"the plan keeps its own output buffers: {e}"
            entry["placement"] = "per-block, except the tuned plan's outputs"

    def calls_for_block(b):
        """The contenders' calls for block b. Under --placement per-block every side writes new memory each block:
        torch.compile's previous outputs are held, so its calls allocate others, and the layouts and the plan
        (where its outputs can be bound) get new tensors."""
        if placement == "fixed":
            return [lambda: compiled(inputs)] + (our_calls(outputs) if kernel else []) + plan_calls
        held.append(compiled(inputs))
        calls = [lambda: compiled(inputs)]
        if kernel:
            outs = {n: torch.empty_like(outputs[n]) for n in outputs}
            held.append(outs)
            calls += our_calls(outs)
        if plan and "plan_placement" not in entry:
            bound.clear()
            bound.update({n: poisoned(outputs[n], torch) for n in outputs})
            held.append(dict(bound))
            plan.bind(1, bound)
        return calls + plan_calls

    entry["flush"] = flushes[0]
    entry.update(time_contenders(names, calls_for_block, blocks, rounds, torch, bench,
                                 flusher(flushes[0], torch, cuda)))
    for kind in flushes[1:]:  # the same contenders again, after another flush
        entry.setdefault("other_flushes", {})[kind] = time_contenders(names, calls_for_block, blocks, rounds, torch,
                                                                      bench, flusher(kind, torch, cuda))
    if bound:
        torch.cuda.synchronize()
        plan.bind(1, {})
        # What the plan wrote into the last block's tensors: its verified outputs (a binding that missed leaves NaN).
        differ = [name for name, t in bound.items() if not bound_matches(t, results_plan[name], torch)]
        if differ:
            entry["error"] = f"the plan's bound outputs {differ} differ from its verified outputs"
    return entry


def poisoned(like, torch):
    """A new tensor like `like` with every byte 0xFF, as the executor poisons its outputs (NaN in every float
    type): what a binding that missed leaves there cannot pass for the plan's output."""
    t = torch.empty_like(like)
    t.view(-1).view(torch.uint8).fill_(0xFF)
    return t


def bound_matches(got, verified, torch):
    """The plan's output written into a bound tensor against the same plan's output checked before the race:
    the same kernels on the same inputs, so equal up to a library's run-to-run order of accumulation."""
    if not got.is_floating_point():
        return torch.equal(got, verified)
    return torch.allclose(got.float(), verified.float(), rtol=1e-3, atol=1e-3, equal_nan=True)


def flusher(kind, torch, cuda):
    """The 256 MB flush before each run: "fill", do_bench's (`cache.zero_()`, a fill kernel), or "memset", the
    executor's (`cudaMemsetAsync`; here the driver's cuMemsetD32Async on the current stream)."""
    buffer = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    if kind == "fill":
        return buffer.zero_
    memset = cuda.cu.cuMemsetD32Async
    memset.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p]

    def flush():
        cuda._cu(memset(buffer.data_ptr(), 0, buffer.numel(), torch.cuda.current_stream().cuda_stream), "memset")
    flush.keep = buffer
    return flush


def time_contenders(names, calls_for_block, blocks, rounds, torch, bench, flush_once=None):
    """calls_for_block(b): the contenders' calls for block b (torch.compile's first); block -1 is the warm-up's.
    flush_once: the flush before each run (default do_bench's, flusher("fill"))."""
    flush_once = flush_once or flusher("fill", torch, None)
    n = len(names)
    calls = calls_for_block(-1)
    # One round's GPU time (and the host's, to size the spin): a few rounds enqueued back to back.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    start.record()
    for r in range(3):
        for c in round_order(r, n):
            flush_once()
            calls[c]()
    end.record()
    host_s = (time.perf_counter() - t0) / (3 * n)
    torch.cuda.synchronize()
    round_ms = start.elapsed_time(end) / 3
    bench.rest()
    for _ in range(max(1, int(WARMUP_MS * n / round_ms))):  # do_bench's warm-up, every contender
        for c in range(n):
            flush_once()
            calls[c]()
    per_block = []
    for b in range(blocks):
        calls = calls_for_block(b)
        for c in range(n):  # each call once untimed: a new placement's first touch outside the timing
            flush_once()
            calls[c]()
        torch.cuda.synchronize()
        bench.spin(3 * host_s * rounds * n + 1e-3)  # the host enqueues the whole block (events too) behind it
        ev = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
              for _ in range(rounds)]
        for r in range(rounds):
            for c in round_order(b * rounds + r, n):
                flush_once()
                ev[r][c][0].record()
                calls[c]()
                ev[r][c][1].record()
        torch.cuda.synchronize()
        per_block.append([statistics.median(ev[r][c][0].elapsed_time(ev[r][c][1]) for r in range(rounds))
                          for c in range(n)])
    out = summarize(names, per_block)
    out["blocks_ms"] = per_block
    out["round_ms"] = round_ms
    return out


def write_report(report, out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "race.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(out, "race.md"), "w", encoding="utf-8") as f:
        f.write(markdown(report))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", nargs="+", required=True, help="sample names or graph files")
    ap.add_argument("--blocks", type=int, default=15, help="blocks of rounds, one ratio each (default 15)")
    ap.add_argument("--rounds", type=int, default=40, help="rounds per block, every contender once (default 40)")
    ap.add_argument("--cli", help="fusion-cli binary (default: $FX_CLI, else the newest build*/app/cli/fusion-cli)")
    ap.add_argument("--out", default=os.environ.get("OUT") or "bench-out")
    ap.add_argument("--variant", action="append", default=[], metavar="FILE[:LAYOUT|:GRIDxBLOCK]",
                    help="also race this hand-edited source of the kernel (same entry point and parameters) with "
                         "layout LAYOUT's grid and block (default 1) or its own; verified like the layouts; one "
                         "sample only")
    ap.add_argument("--harness", help="libfusion_harness.so, to race the fused plan as fusion-cli run tunes it "
                                      "(default: $FX_HARNESS, else the one built next to fusion-cli; without it "
                                      "only one-kernel plans race)")
    ap.add_argument("--flush", nargs="+", choices=["fill", "memset"], default=["fill"],
                    help="the 256 MB flush before each run: fill (do_bench's zero_(), the default) or memset "
                         "(the executor's cudaMemsetAsync); several: the race again after each")
    ap.add_argument("--placement", choices=["fixed", "per-block"], default="fixed",
                    help="fixed: every block writes the same output memory (each side its own); per-block: both "
                         "sides write newly allocated outputs each block, so that where the outputs lie in DRAM "
                         "varies from block to block and the blocks' ratios include it")
    args = ap.parse_args(argv)
    try:
        variants = [parse_variant(v) for v in args.variant]
    except ValueError as e:
        ap.error(str(e))
    if variants and len(args.samples) != 1:
        ap.error("--variant edits one sample's kernel: give one sample")
    if args.blocks < 6 or args.rounds < 1:
        ap.error("--blocks takes at least 6 (for an interval) and --rounds at least 1")
    import bench  # sets the Inductor and Triton cache directories before torch loads
    import crosscheck
    import fx_torch
    import torch
    import triton
    cli = bench.find_cli(args.cli)
    if not cli:
        ap.error("no fusion-cli: build it or give --cli")
    if not torch.cuda.is_available():
        print("race: no CUDA device; nothing to race", file=sys.stderr)
        return 2
    bench.torch_as_our_plans()
    cuda = Cuda()
    harness_path = find_harness(args.harness, cli)
    harness = Harness(harness_path) if harness_path else None
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "nvrtc": cuda.version(), "blocks": args.blocks, "rounds": args.rounds, "placement": args.placement,
              "flush": args.flush, "harness": harness_path, "date": time.strftime("%Y-%m-%d"),
              "samples": []}
    failed = 0
    for path in bench.sample_paths(args.samples):
        t0 = time.perf_counter()
        try:
            entry = race_sample(cli, path, args.blocks, args.rounds, cuda, torch, bench, crosscheck, fx_torch,
                                variants, args.placement, harness, tuple(args.flush))
        except Exception as e:  # noqa: BLE001  one sample's failure is named in the report, which is kept
            entry = {"name": os.path.basename(path), "error": f"{type(e).__name__}: {e}"}
        failed += "error" in entry
        report["samples"].append(entry)
        torch.cuda.empty_cache()
        ranked = [x for x in entry.get("layouts", []) if x["ratio_median"] is not None]
        tuned = [x for x in ranked if x["layout"].startswith(TUNED_PLAN)]
        best = min([x for x in ranked if x not in tuned], key=lambda x: x["ratio_median"], default=None)
        said = [f"best layout {best['ratio_median']:.4f} ({best['verdict']})"] if best else []
        said += [f"the tuned plan {x['ratio_median']:.4f} ({x['verdict']})" for x in tuned]
        for kind, other in entry.get("other_flushes", {}).items():
            said += [f"after the {kind} flush {x['ratio_median']:.4f} ({x['verdict']})" for x in other["layouts"]
                     if x["layout"].startswith(TUNED_PLAN)]
        print(f"  {entry['name']}: {time.perf_counter() - t0:.1f} s, "
              + (entry.get("error") or entry.get("skipped") or ", ".join(said) or "no ratios"), flush=True)
        write_report(report, args.out)  # after every sample: a later failure or a timeout loses nothing
    print(markdown(report))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
