#!/usr/bin/env python3
"""Layouts of streaming kernels, raced under one protocol (cubin_race.cu).

Writes one CUDA file per layout, compiles each with nvcc -cubin, writes the race's SPEC and runs the race:

    python3 bench/microbench/stream_layouts.py elementwise OUTDIR [ROUNDS]
    python3 bench/microbench/stream_layouts.py rowsum OUTDIR [ROUNDS]
    python3 bench/microbench/stream_layouts.py prefetch OUTDIR [ROUNDS] [memset|read]

elementwise: relu(x * w + b) and (sin x, cos x) over 64M f32 (the relu_mul_add and sin_cos samples).

A layout: threads per block, elements per vector access (vec), vector accesses per thread (unroll: the
thread's accesses lie a block's width apart, so every warp still reads one contiguous span), the loads of all
its accesses issued before any arithmetic ("loads first") or each access computed and stored in turn, and a
grid of one block per tile or a grid of resident blocks looping over the tiles.

rowsum: the sum of squares over rows of [16384, 4096] f32 (the sum_of_squares sample), one block per row (the
generator's layout: T threads, each with 4096 / (4 T) 16-byte loads), one warp per row (U loads in flight per
lane), and a bound: the whole tensor summed by resident blocks with no rows at all (what reading 256 MiB costs).

prefetch: the generator's layouts of both races with their loads written in PTX, without and with an L2
prefetch-size qualifier (ld.global.L2::64B, ::128B or ::256B: the L2 fetches that much around each miss), and
with the read-only path (ld.global.nc). Neither Triton nor our generator writes these qualifiers. Also the sum
of squares' loads with other cache operators and L2 policies (CACHE_OPERATORS), and a 256 MiB copy for the
copy bandwidth. The last argument picks the race's flush (cubin_race.cu): do_bench's memset, which leaves dirty
lines in the L2, or a read, which leaves clean ones.
"""
import concurrent.futures
import os
import subprocess
import sys

N = 8192 * 8192

KERNELS = {
    # name: (inputs, outputs, body per element: reads `<in>` and assigns `<out>`)
    "rma": (["x", "w", "b"], ["y"], "y = fmaxf(x * w + b, 0.0f);"),
    "sc": (["x"], ["s", "c"], "s = sinf(x); c = cosf(x);"),
}


def ptx_loads(qualifiers):
    """ldv(p) for 8- and 16-byte vectors of f32: ld.global<qualifiers>.v2/.v4.f32."""
    text = ""
    for n in (2, 4):
        regs = ", ".join(f"%{i}" for i in range(n))
        outs = ", ".join(f'"=f"(r.v[{i}])' for i in range(n))
        text += (f"__device__ __forceinline__ fx_vec<float, {n}> ldv(const fx_vec<float, {n}>* p) {{\n"
                 f"  fx_vec<float, {n}> r;\n"
                 f'  asm("ld.global{qualifiers}.v{n}.f32 {{{regs}}}, [%{n}];" : {outs} : "l"(p));\n'
                 "  return r;\n}\n")
    return text


def source(kernel, block, vec, unroll, loads_first, persistent, ptx=None):
    """ptx: None loads by dereferencing; else each load is ld.global<ptx> (ptx_loads)."""
    ins, outs, body = KERNELS[kernel]
    params = [f"const float* __restrict__ in_{v}" for v in ins] + [f"float* __restrict__ out_{v}" for v in outs]
    lines = [
        "template <typename T, int N> struct alignas(sizeof(T) * N) fx_vec { T v[N]; };",
        *([] if ptx is None else [ptx_loads(ptx)]),
        f'extern "C" __global__ void __launch_bounds__({block}) k({", ".join(params)}) {{',
        f"  const int n = {N};",
        f"  const int tile = {block * vec * unroll};",
        f"  for (int start = blockIdx.x * tile + threadIdx.x * {vec}; start < n; start += gridDim.x * tile) {{",
    ]
    V = f"fx_vec<float, {vec}>"
    at = f"start + u * {block * vec}"  # the thread's u-th access

    def load(v):
        address = f"reinterpret_cast<const {V}*>(in_{v} + {at})"
        return f"*{address}" if ptx is None else f"ldv({address})"
    if loads_first:  # every access's loads issued before any arithmetic
        lines += [f"    {V} {v}_v[{unroll}];" for v in ins]
        lines += ["    #pragma unroll", f"    for (int u = 0; u < {unroll}; ++u) {{"]
        lines += [f"      {v}_v[u] = {load(v)};" for v in ins]
        lines.append("    }")
    lines += ["    #pragma unroll", f"    for (int u = 0; u < {unroll}; ++u) {{"]
    if not loads_first:  # each access loaded, computed and stored in turn
        lines += [f"      const {V} {v}_v = {load(v)};" for v in ins]
    loaded = "_v[u]" if loads_first else "_v"
    lines += [f"      {V} {v}_o;" for v in outs]
    lines += ["      #pragma unroll", f"      for (int e = 0; e < {vec}; ++e) {{"]
    lines += [f"        const float {v} = {v}{loaded}.v[e];" for v in ins]
    lines += ["        float " + ", ".join(outs) + ";", "        " + body]
    lines += [f"        {v}_o.v[e] = {v};" for v in outs]
    lines.append("      }")
    lines += [f"      *reinterpret_cast<{V}*>(out_{v} + {at}) = {v}_o;" for v in outs]
    lines.append("    }")
    lines += ["  }", "}", ""]
    tiles = N // (block * vec * unroll)
    grid = min(tiles, 132 * (2048 // block)) if persistent else tiles
    return "\n".join(lines), grid


def layouts():
    for block in (128, 256, 512, 1024):
        for vec in (2, 4):
            for unroll in (1, 2, 4):
                yield block, vec, unroll, unroll > 1, False
    for block, vec in ((256, 2), (256, 4), (128, 4)):
        yield block, vec, 2, False, False  # unrolled without hoisting the loads by hand
        yield block, vec, 1, False, True   # resident blocks looping


def elementwise(out):
    """The elementwise race's (SPEC lines, sources to compile: (label, text))."""
    spec = [f"buffer {v} {N * 4} random" for v in ("x", "w", "b")] + [f"buffer {v} {N * 4}" for v in ("y", "s", "c")]
    sources = []
    for kernel, (ins, outs, _) in KERNELS.items():
        first = None
        for block, vec, unroll, loads_first, persistent in layouts():
            label = f"{kernel}_b{block}_v{vec}_u{unroll}" + ("_lf" if loads_first else "") + ("_res" if persistent else "")
            text, grid = source(kernel, block, vec, unroll, loads_first, persistent)
            sources.append((label, text))
            spec.append(f"kernel {label} {os.path.join(out, label)}.cubin k {grid} {block} 0 " + " ".join(ins + outs))
            if first is None:
                first = label
            else:
                spec.append(f"same {first} {label} {outs[0]}")
    return spec, sources


ROWS, COLS = 16384, 4096


EVICT_FIRST = "createpolicy.fractional.L2::evict_first.b64 %0, 1.0;"


def row_preamble(prefetch="", once=(".L2::cache_hint", EVICT_FIRST)):
    """load(p, once): a 16-byte load, plain or (once) ld.global<once[0]> with the L2 policy once[1] (a createpolicy
    instruction, or None for no policy operand); each with the PTX prefetch-size qualifier given."""
    qualifiers, policy = once

    def ld4(q):  # r = ld.global<q>.v4.f32 [p], no policy operand
        return f'asm("ld.global{q}.v4.f32 {{%0, %1, %2, %3}}, [%4];" : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w) : "l"(p));'

    if policy is None:
        once_load = ld4(qualifiers + prefetch)
    else:
        once_load = f"""unsigned long long policy;
    asm("{policy}" : "=l"(policy));
    asm("ld.global{qualifiers}{prefetch}.v4.f32 {{%0, %1, %2, %3}}, [%4], %5;"
        : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w) : "l"(p), "l"(policy));"""
    plain = ld4(prefetch) if prefetch else "r = *reinterpret_cast<const float4*>(p);"
    return f"""template <typename T, int N> struct alignas(sizeof(T) * N) fx_vec {{ T v[N]; }};
__device__ __forceinline__ float4 load(const float* p, bool once) {{
  float4 r;
  if (once) {{
    {once_load}
  }} else {{
    {plain}
  }}
  return r;
}}
__device__ __forceinline__ float sq4(float4 v) {{ return v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w; }}
__device__ __forceinline__ float warp_sum(float s) {{
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  return s;
}}
"""


ROW_PREAMBLE = row_preamble()


def rowsum_block(threads, once, preamble=ROW_PREAMBLE):
    chunks = COLS // (4 * threads)
    return preamble + f"""extern "C" __global__ void __launch_bounds__({threads}) k(const float* __restrict__ x, float* __restrict__ y) {{
  __shared__ float part[32];
  for (int row = blockIdx.x; row < {ROWS}; row += gridDim.x) {{
    float4 v[{chunks}];
    #pragma unroll
    for (int c = 0; c < {chunks}; ++c) v[c] = load(x + (long long)row * {COLS} + (c * {threads} + threadIdx.x) * 4, {str(once).lower()});
    float s = 0.0f;
    #pragma unroll
    for (int c = 0; c < {chunks}; ++c) s += sq4(v[c]);
    s = warp_sum(s);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {{
      s = threadIdx.x < {threads // 32} ? part[threadIdx.x] : 0.0f;
      s = warp_sum(s);
      if (threadIdx.x == 0) y[row] = s;
    }}
    __syncthreads();
  }}
}}
"""


def rowsum_warp(warps, unroll, once):
    steps = COLS // (32 * 4)
    return ROW_PREAMBLE + f"""extern "C" __global__ void __launch_bounds__({warps * 32}) k(const float* __restrict__ x, float* __restrict__ y) {{
  const int lane = threadIdx.x % 32;
  for (int row = blockIdx.x * {warps} + threadIdx.x / 32; row < {ROWS}; row += gridDim.x * {warps}) {{
    const float* r = x + (long long)row * {COLS} + lane * 4;
    float s = 0.0f;
    for (int i = 0; i < {steps}; i += {unroll}) {{
      float4 v[{unroll}];
      #pragma unroll
      for (int u = 0; u < {unroll}; ++u) v[u] = load(r + (i + u) * 128, {str(once).lower()});
      #pragma unroll
      for (int u = 0; u < {unroll}; ++u) s += sq4(v[u]);
    }}
    s = warp_sum(s);
    if (lane == 0) y[row] = s;
  }}
}}
"""


def read_bound(unroll, preamble=ROW_PREAMBLE):
    n4 = ROWS * COLS // 4
    return preamble + f"""extern "C" __global__ void __launch_bounds__(256) k(const float* __restrict__ x, float* __restrict__ y) {{
  float s = 0.0f;
  const long long stride = (long long)gridDim.x * 256 * {unroll};
  for (long long i = (long long)blockIdx.x * 256 * {unroll} + threadIdx.x; i < {n4}; i += stride) {{
    float4 v[{unroll}];
    #pragma unroll
    for (int u = 0; u < {unroll}; ++u) v[u] = load(x + (i + u * 256) * 4, true);
    #pragma unroll
    for (int u = 0; u < {unroll}; ++u) s += sq4(v[u]);
  }}
  s = warp_sum(s);
  if (threadIdx.x % 32 == 0) atomicAdd(y + blockIdx.x % {ROWS}, s);
}}
"""


def rowsum(out):
    spec = [f"buffer x {ROWS * COLS * 4} random", f"buffer y {ROWS * 4}"]
    sources = []
    first = None

    def add(label, text, grid, block):
        nonlocal first
        sources.append((label, text))
        spec.append(f"kernel {label} {os.path.join(out, label)}.cubin k {grid} {block} 0 x y")
        if first is None:
            first = label
        elif not label.startswith("bound"):
            spec.append(f"same {first} {label} y")

    for threads in (256, 512, 1024):
        for once in (True, False):
            add(f"block_t{threads}" + ("_once" if once else ""), rowsum_block(threads, once), ROWS, threads)
    for warps in (4, 8):
        for unroll in (4, 8, 16):
            add(f"warp_w{warps}_u{unroll}_once", rowsum_warp(warps, unroll, True), ROWS // warps, warps * 32)
    add("warp_w8_u8", rowsum_warp(8, 8, False), ROWS // 8, 256)
    for unroll in (4, 8):
        add(f"bound_u{unroll}", read_bound(unroll), 132 * 8, 256)
    return spec, sources


PREFETCH = {"": "ptx", ".L2::64B": "pf64", ".L2::128B": "pf128", ".L2::256B": "pf256", ".nc": "nc",
            ".nc.L2::256B": "nc_pf256"}


# The sum of squares' one-use loads written other ways: the streaming cache operators (.cs; .lu, which is .cs for
# global addresses), no L1 allocation, the read-only path, half the loads evict_first, evict_unchanged.
CACHE_OPERATORS = {
    "cs": (".cs", None),
    "lu": (".lu", None),
    "na_once": (".L1::no_allocate.L2::cache_hint", EVICT_FIRST),
    "nc_na_once": (".nc.L1::no_allocate.L2::cache_hint", EVICT_FIRST),
    "l1first_once": (".L1::evict_first.L2::cache_hint", EVICT_FIRST),
    "half_once": (".L2::cache_hint", "createpolicy.fractional.L2::evict_first.b64 %0, 0.5;"),
    "unchanged": (".L2::cache_hint", "createpolicy.fractional.L2::evict_unchanged.b64 %0, 1.0;"),
}


def prefetch(out):
    """The prefetch race's (SPEC lines, sources): each layout as its race writes it, then with PTX loads."""
    spec = [f"buffer {v} {N * 4} random" for v in ("x", "w", "b")] + [f"buffer {v} {N * 4}" for v in ("y", "s", "c")]
    spec += [f"buffer rx {ROWS * COLS * 4} random", f"buffer ry {ROWS * 4}", f"buffer cx {ROWS * COLS * 4}"]
    sources = []

    def add(first, label, text, grid, block, args, check):
        sources.append((label, text))
        spec.append(f"kernel {label} {os.path.join(out, label)}.cubin k {grid} {block} 0 {args}")
        if first != label:
            spec.append(f"same {first} {label} {check}")

    for kernel, block, vec in (("rma", 256, 2), ("rma", 256, 4), ("rma", 512, 2), ("sc", 256, 4), ("sc", 256, 2)):
        ins, outs, _ = KERNELS[kernel]
        first = f"{kernel}_b{block}_v{vec}_u1"
        for ptx in (None, *PREFETCH):
            label = first + ("" if ptx is None else "_" + PREFETCH[ptx])
            text, grid = source(kernel, block, vec, 1, False, False, ptx)
            add(first, label, text, grid, block, " ".join(ins + outs), outs[0])
    for once in (True, False):
        first = "block_t512" + ("_once" if once else "")
        for ptx in ("", ".L2::64B", ".L2::128B", ".L2::256B"):
            add(first, first + ("_" + PREFETCH[ptx] if ptx else ""), rowsum_block(512, once, row_preamble(ptx)),
                ROWS, 512, "rx ry", "ry")
    for name, once in CACHE_OPERATORS.items():
        add("block_t512_once", "block_t512_" + name, rowsum_block(512, True, row_preamble("", once)), ROWS, 512,
            "rx ry", "ry")
    for ptx in ("", ".L2::256B"):
        label = "bound_u8" + ("_" + PREFETCH[ptx] if ptx else "")
        add(label, label, read_bound(8, row_preamble(ptx)), 132 * 8, 256, "rx ry", "ry")
    n4 = ROWS * COLS // 4
    add("copy", "copy", f"""extern "C" __global__ void __launch_bounds__(256) k(const float4* __restrict__ x, float4* __restrict__ y) {{
  const long long i = (long long)blockIdx.x * 256 + threadIdx.x;
  if (i < {n4}) y[i] = x[i];
}}
""", n4 // 256, 256, "rx cx", "cx")
    return spec, sources


def main():
    kind, out = sys.argv[1], os.path.abspath(sys.argv[2])
    rounds = sys.argv[3] if len(sys.argv) > 3 else "7"
    flush = sys.argv[4:5]  # memset (the race's default) or read
    os.makedirs(out, exist_ok=True)
    spec, sources = {"elementwise": elementwise, "rowsum": rowsum, "prefetch": prefetch}[kind](out)
    compiles = []
    for label, text in sources:
        cu = os.path.join(out, label + ".cu")
        with open(cu, "w") as f:
            f.write(text)
        compiles.append(["nvcc", "-O3", "-arch=sm_90", "-cubin", "-o", os.path.join(out, label + ".cubin"), cu])
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        for done in pool.map(lambda cmd: subprocess.run(cmd).returncode, compiles):
            if done != 0:
                sys.exit("nvcc failed")
    spec_path = os.path.join(out, "spec.txt")
    with open(spec_path, "w") as f:
        f.write("\n".join(spec) + "\n")
    race = os.path.join(out, "race")
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run(["nvcc", "-O3", "-std=c++17", "-arch=sm_90", os.path.join(here, "cubin_race.cu"), "-lcuda", "-o", race],
                   check=True)
    subprocess.run([race, spec_path, rounds, *flush], check=True)


if __name__ == "__main__":
    main()
