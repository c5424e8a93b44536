"""Writes Inductor's generated code and Triton's compiled kernels (PTX, launch metadata) for sample graphs.

    TORCHINDUCTOR_CACHE_DIR=/tmp/ind TRITON_CACHE_DIR=/tmp/tri python3 bench/microbench/dump_inductor.py OUTDIR softmax sin_cos
"""
import glob
import os
import shutil
import sys

import torch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "bench"))
import fx_torch  # noqa: E402


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_grad_enabled(False)
    for sample in sys.argv[2:]:
        graph = fx_torch.load_graph(os.path.join(REPO, "sample_graphs", sample + ".json"))
        fn = fx_torch.build_function(graph)
        inputs = fx_torch.make_inputs(graph, "cuda")
        torch._dynamo.reset()
        compiled = torch.compile(fn, mode="default", dynamic=False)
        compiled(inputs)
        torch.cuda.synchronize()
    tri = os.environ["TRITON_CACHE_DIR"]
    for f in glob.glob(os.path.join(tri, "*", "*")):
        if f.endswith((".ptx", ".json", ".ttgir", ".cubin")):
            shutil.copy(f, os.path.join(out, os.path.basename(os.path.dirname(f))[:8] + "_" + os.path.basename(f)))
    ind = os.environ["TORCHINDUCTOR_CACHE_DIR"]
    for f in glob.glob(os.path.join(ind, "**", "*.py"), recursive=True):
        if "triton_" in open(f, encoding="utf-8", errors="replace").read():
            shutil.copy(f, os.path.join(out, "inductor_" + os.path.basename(f)))
    for f in glob.glob(os.path.join(ind, "**", "*.best_config"), recursive=True):
        shutil.copy(f, os.path.join(out, os.path.basename(f)))


if __name__ == "__main__":
    main()
