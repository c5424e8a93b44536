#!/usr/bin/env python3
"""`pip install ./python` needs no network: the in-tree build backend makes a wheel from the standard library
alone. Built here directly (pip is not needed for the check), and installed with pip where pip is present."""
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(PACKAGE_ROOT, "_build"))
import fx_backend  # noqa: E402


def has_pip():
    return subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0


class WheelTest(unittest.TestCase):
    def test_the_wheel_holds_every_module_and_its_metadata(self):
        self.assertEqual(fx_backend.get_requires_for_build_wheel(), [])
        with tempfile.TemporaryDirectory() as d:
            name = fx_backend.build_wheel(d)
            with zipfile.ZipFile(os.path.join(d, name)) as z:
                names = set(z.namelist())
                record = z.read("fusion_explorer-0.1.0.dist-info/RECORD").decode()
        modules = {f"fusion_explorer/{m}" for m in os.listdir(os.path.join(PACKAGE_ROOT, "fusion_explorer"))
                   if m.endswith(".py")}
        self.assertLessEqual(modules | {"fusion_explorer-0.1.0.dist-info/METADATA"}, names)
        for m in modules:
            self.assertIn(m + ",sha256=", record)

    @unittest.skipUnless(has_pip(), "pip is not installed")
    def test_pip_installs_it_without_an_index(self):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
            proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-build-isolation", "--target", d, PACKAGE_ROOT],
                                  capture_output=True, text=True, env=env)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            check = subprocess.run([sys.executable, "-c", "import fusion_explorer.inductor_plan as p; print(p.__file__)"],
                                   capture_output=True, text=True, env=dict(env, PYTHONPATH=d), cwd=d)
            self.assertTrue(check.stdout.strip().startswith(d), check.stdout + check.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=1)
