"""race.py's plain-Python half: which plans can race, the rotation, the block statistics, the report; and, where
NVRTC loads (the CUDA toolkit), that every layout fusion-cli codegen --json writes compiles standalone through
race.py's ctypes binding with the options the bundle names. No GPU, no torch."""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import race  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def bundle(*groups):
    return {"format": "fusion-explorer/kernels", "version": 1, "graph": "g", "groups": list(groups)}


def kernel(name):
    return {"name": name, "inputs": ["x"], "outputs": ["y"],
            "layouts": [{"description": "a", "grid": 4, "block": 256, "source": "..."}]}


class OneKernel(unittest.TestCase):
    def test_a_plan_of_one_generated_kernel_races(self):
        k, why = race.one_kernel(bundle({"id": "g:y", "kernels": [kernel("fx_g0_y")]},
                                        {"id": "g:t", "kernels": [], "none": "not launched: every consumer "
                                         "recomputes what it computes"}))
        self.assertIsNone(why)
        self.assertEqual(k["name"], "fx_g0_y")

    def test_a_library_group_or_two_kernels_say_why_not(self):
        k, why = race.one_kernel(bundle({"id": "g:mm", "kernels": [], "none": "no generated kernel: node mm "
                                         "(matmul) runs on cuBLASLt/cuDNN"}, {"id": "g:y", "kernels": [kernel("k")]}))
        self.assertIsNone(k)
        self.assertIn("1 of its 2 groups run no generated kernel (g:mm: no generated kernel: node mm", why)
        k, why = race.one_kernel(bundle({"id": "g:a", "kernels": [kernel("a")]}, {"id": "g:b", "kernels": [kernel("b")]}))
        self.assertIsNone(k)
        self.assertIn("2 generated kernels", why)
        k, why = race.one_kernel({"format": "fusion-explorer/graph"})
        self.assertIn("not a fusion-explorer/kernels file", why)


class Statistics(unittest.TestCase):
    def test_each_contender_runs_in_every_position(self):
        n = 4
        positions = {c: set() for c in range(n)}
        for r in range(n):
            order = race.round_order(r, n)
            self.assertEqual(sorted(order), list(range(n)))
            for pos, c in enumerate(order):
                positions[c].add(pos)
        self.assertTrue(all(p == set(range(n)) for p in positions.values()))

    def test_block_ratios_give_the_verdicts(self):
        # torch.compile 0.200 ms; layout A 1% faster in every block, layout B level (half a block each way).
        blocks = [[0.200, 0.198, 0.200 + (0.001 if i % 2 else -0.001)] for i in range(15)]
        out = race.summarize(["torch.compile", "A", "B"], blocks)
        self.assertAlmostEqual(out["compile_ms_median"], 0.200)
        a, b = out["layouts"]
        self.assertAlmostEqual(a["ratio_median"], 0.99)
        self.assertEqual(a["verdict"], "fused faster")
        self.assertEqual(a["fused_faster_in"], 15)
        self.assertEqual(b["verdict"], "no difference shown")
        self.assertEqual(b["fused_faster_in"], 8)
        slower = race.summarize(["torch.compile", "C"], [[0.2, 0.202]] * 15)["layouts"][0]
        self.assertEqual(slower["verdict"], "torch.compile faster")
        report = {"device": "GPU", "torch": "t", "triton": "tr", "blocks": 15, "rounds": 40, "samples": [
            dict(name="s", **out), {"name": "gpt2_block", "skipped": "not raced: 8 of its 16 groups ..."}]}
        text = race.markdown(report)
        self.assertIn("| s | A | 0.2000 | 0.1980 | 0.9900 | 0.9900 - 0.9900 | 96.5% | 15 of 15 | fused faster |", text)
        self.assertIn("| gpt2_block | not raced: 8 of its 16 groups ... |", text)
        self.assertIn("after the same 256 MB flush (do_bench's zero_(), a fill kernel)", text)
        # The same contenders after the executor's memset flush: rows of their own.
        report["flush"] = ["fill", "memset"]
        report["samples"][0]["other_flushes"] = {"memset": race.summarize(["torch.compile", "A", "B"], blocks)}
        text = race.markdown(report)
        self.assertIn("(do_bench's zero_(), a fill kernel or the executor's cudaMemsetAsync)", text)
        self.assertIn("| s | A (memset flush) | 0.2000 | 0.1980 | 0.9900 |", text)
        self.assertNotIn("could not be bound", text)
        # New outputs every block: the report says so, and names a plan whose outputs stayed in its own buffers.
        report["placement"] = "per-block"
        report["samples"][0]["plan_placement"] = "the plan keeps its own output buffers: 'k' is one of the 3 parts"
        text = race.markdown(report)
        self.assertIn("every contender's outputs newly allocated every block", text)
        self.assertIn("- s: the plan keeps its own output buffers: 'k' is one of the 3 parts", text)


class Launch(unittest.TestCase):
    def test_the_plan_and_the_options_follow_the_gpu(self):
        self.assertEqual(race.device_preset("NVIDIA H200"), "h200")
        self.assertEqual(race.device_preset("NVIDIA A100-SXM4-80GB"), "a100")
        self.assertEqual(race.device_preset("NVIDIA H100 80GB HBM3"), "h100")
        self.assertEqual(race.nvrtc_options(["--gpu-architecture=sm_90", "-std=c++17", "--generate-line-info"], 8, 0),
                         ["--gpu-architecture=sm_80", "-std=c++17", "--generate-line-info"])
        self.assertEqual(race.nvrtc_options(None, 9, 0)[0], "--gpu-architecture=sm_90")

    def test_each_launch_parameter_points_at_its_device_pointer(self):
        try:
            cuda = race.Cuda()
        except RuntimeError as e:
            self.skipTest(f"no NVRTC here: {e}")
        pointers = [0x7F0000001000, 0x7F0000002000, 0x7F0000003000]
        launch = cuda.launcher(None, 4, 256, pointers, 0)  # built, not called: no driver needed
        values, params = launch.keep
        self.assertEqual(len(params), 3)
        for i, p in enumerate(pointers):
            self.assertEqual(ctypes.c_void_p.from_address(params[i]).value, p)

    def test_a_report_is_written_after_each_sample_whatever_it_holds(self):
        report = {"device": "GPU", "torch": "t", "triton": "tr", "nvrtc": "13.0", "blocks": 15, "rounds": 40,
                  "samples": [{"name": "a", "error": "RuntimeError: CUDA driver launch: an illegal memory access"},
                              {"name": "b", "skipped": "not raced: ..."}]}
        with tempfile.TemporaryDirectory() as tmp:
            race.write_report(report, os.path.join(tmp, "out"))
            with open(os.path.join(tmp, "out", "race.json"), encoding="utf-8") as f:
                self.assertEqual(json.load(f)["samples"][0]["name"], "a")
            with open(os.path.join(tmp, "out", "race.md"), encoding="utf-8") as f:
                text = f.read()
        self.assertIn("NVRTC 13.0", text)
        self.assertIn("| a | RuntimeError: CUDA driver launch: an illegal memory access |", text)


class Variants(unittest.TestCase):
    def test_a_variant_names_its_file_and_the_layout_it_borrows(self):
        self.assertEqual(race.parse_variant("dir/exp_ex2.cu:2"), ("exp_ex2", "dir/exp_ex2.cu", 1))
        self.assertEqual(race.parse_variant("dir/exp_ex2.cu"), ("exp_ex2", "dir/exp_ex2.cu", 0))
        self.assertEqual(race.parse_variant("C:/x/v.cu"), ("v", "C:/x/v.cu", 0))
        with self.assertRaisesRegex(ValueError, "layouts count from 1"):
            race.parse_variant("v.cu:0")
        self.assertEqual(race.parse_variant("dir/t.cu:65536x128"), ("t", "dir/t.cu", (65536, 128)))
        with self.assertRaisesRegex(ValueError, "1 to 1024 threads"):
            race.parse_variant("t.cu:8x2048")
        k = kernel("fx_g0_y")
        k["layouts"].append({"description": "b", "grid": 8, "block": 128, "source": "..."})
        layouts = race.with_variants(k, [("v", "v.cu", 1)], read=lambda p: "// edited " + p)
        self.assertEqual(len(layouts), 3)
        self.assertEqual((layouts[2]["grid"], layouts[2]["block"], layouts[2]["source"]), (8, 128, "// edited v.cu"))
        self.assertIn("v (variant, grid and block of layout 2)", layouts[2]["description"])
        with self.assertRaisesRegex(ValueError, "the kernel has 2 layouts, not 3"):
            race.with_variants(k, [("v", "v.cu", 2)], read=lambda p: "")
        own = race.with_variants(k, [("t", "t.cu", (65536, 128))], read=lambda p: "")[2]
        self.assertEqual((own["grid"], own["block"]), (65536, 128))
        self.assertIn("t (variant, grid 65536, block 128)", own["description"])


class HarnessBinding(unittest.TestCase):
    def test_the_library_is_found_next_to_fusion_cli_or_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            cli = os.path.join(tmp, "build", "app", "cli", "fusion-cli")
            lib = os.path.join(tmp, "build", "bench", "harness", "libfusion_harness.so")
            os.makedirs(os.path.dirname(lib))
            saved = os.environ.pop("FX_HARNESS", None)
            try:
                self.assertIsNone(race.find_harness(None, cli))
                open(lib, "w").close()
                self.assertEqual(race.find_harness(None, cli), lib)
                self.assertEqual(race.find_harness("/x/h.so", cli), "/x/h.so")
                os.environ["FX_HARNESS"] = "/y/h.so"
                self.assertEqual(race.find_harness(None, cli), "/y/h.so")
            finally:
                os.environ.pop("FX_HARNESS", None)
                if saved is not None:
                    os.environ["FX_HARNESS"] = saved

    def test_the_tuned_plan_is_named_by_what_it_kept(self):
        one = [{"name": "fx_g0_y", "kind": "elementwise", "path": "2 elements per thread (8-byte accesses)"}]
        self.assertEqual(race.plan_label(one),
                         "fused plan as fusion-cli run tunes it (2 elements per thread (8-byte accesses))")
        self.assertEqual(race.plan_label(one * 3), "fused plan as fusion-cli run tunes it (3 steps)")
        tuned = [{"name": "fx_g0_y", "kind": "elementwise",
                  "path": "2 elements per thread (8-byte accesses): the fastest of 3 layouts timed here in 76 rounds"},
                 {"name": "g:y", "kind": "matmul",
                  "path": "cuBLASLt RELU_BIAS epilogue, TF32 tensor cores; the fastest of 20 configurations"}]
        self.assertEqual(race.plan_label(tuned[:1]),
                         "fused plan as fusion-cli run tunes it (2 elements per thread (8-byte accesses))")
        self.assertEqual(race.plan_label(tuned[1:]),
                         "fused plan as fusion-cli run tunes it (cuBLASLt RELU_BIAS epilogue, TF32 tensor cores)")

    def test_the_binding_raises_the_librarys_reason(self):
        path = os.environ.get("FX_HARNESS")
        if not path:
            self.skipTest("FX_HARNESS not set (ctest sets it where the CUDA layer is built)")
        harness = race.Harness(path)
        with self.assertRaisesRegex(RuntimeError, "fx_harness_open: .*cannot open /no/such.json"):
            harness.open("/no/such.json", {})
        with self.assertRaisesRegex(RuntimeError, "unknown option 'bogus'"):
            harness.open(os.path.join(REPO, "sample_graphs", "relu_mul_add.json"), {"bogus": 1})
        with self.assertRaisesRegex(RuntimeError, "fx_harness_bind_outputs: a null handle"):
            race.HarnessPlan(harness, None).bind(1, {})


class Compile(unittest.TestCase):
    def test_every_layout_of_a_one_kernel_sample_compiles_through_the_binding(self):
        cli = os.environ.get("FX_CLI")
        if not cli:
            self.skipTest("FX_CLI not set (ctest sets it to the built fusion-cli)")
        try:
            cuda = race.Cuda()
        except RuntimeError as e:
            self.skipTest(f"no NVRTC here: {e}")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "k.json")
            proc = subprocess.run([cli, "codegen", os.path.join(REPO, "sample_graphs", "softmax.json"), "--json", out],
                                  capture_output=True, text=True)
            if "built without CUDA support" in proc.stderr:
                self.skipTest(proc.stderr.strip())
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(out, encoding="utf-8") as f:
                b = json.load(f)
        self.assertEqual(b["graph"], "softmax")
        self.assertIn("-std=c++17", b["nvrtc_options"])
        self.assertRegex(cuda.version(), r"^\d+\.\d+$")
        k, why = race.one_kernel(b)
        self.assertIsNone(why)
        self.assertEqual((k["inputs"], k["outputs"]), (["x"], ["y"]))
        self.assertEqual(len(k["layouts"]), 3)
        for layout in k["layouts"]:
            cubin = cuda.compile(layout["source"], k["name"], b["nvrtc_options"])
            self.assertEqual(cubin.raw[:4], b"\x7fELF", layout["description"])
        # The hand-edited variants kept in the repository still compile as the kernel they stand in for.
        variants = os.path.join(REPO, "bench", "microbench", "race_variants")
        for name in sorted(os.listdir(variants)):
            with open(os.path.join(variants, name), encoding="utf-8") as f:
                cubin = cuda.compile(f.read(), "fx_g0_y2", b["nvrtc_options"])
            self.assertEqual(cubin.raw[:4], b"\x7fELF", name)
        with self.assertRaisesRegex(RuntimeError, "NVRTC compile broken"):
            cuda.compile("extern \"C\" __global__ void broken() { undeclared(); }", "broken", b["nvrtc_options"])


if __name__ == "__main__":
    unittest.main()
