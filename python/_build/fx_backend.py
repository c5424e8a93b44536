"""A PEP 517 build backend for this pure-Python package, in the standard library only, so `pip install ./python`
works offline: pip has nothing to download to build it (setuptools would need `wheel` from an index)."""
import base64
import hashlib
import os
import zipfile

NAME, VERSION = "fusion_explorer", "0.1.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
METADATA = (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
            "Summary: Export PyTorch models to Fusion Explorer and record what torch.compile's Inductor fused\n"
            "Requires-Python: >=3.9\nProvides-Extra: torch\nRequires-Dist: torch>=2.5; extra == \"torch\"\n")
WHEEL = "Wheel-Version: 1.0\nGenerator: fx_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(directory, files):
    """files: [(archive name, bytes)]; adds the dist-info and RECORD."""
    files = files + [(f"{DIST_INFO}/METADATA", METADATA.encode()), (f"{DIST_INFO}/WHEEL", WHEEL.encode())]
    record = [_record_line(n, d) for n, d in files] + [f"{DIST_INFO}/RECORD,,"]
    wheel_name = f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            z.writestr(n, d)
        z.writestr(f"{DIST_INFO}/RECORD", "\n".join(record) + "\n")
    return wheel_name


def _package_files():
    out, pkg = [], os.path.join(ROOT, NAME)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            with open(os.path.join(pkg, name), "rb") as f:
                out.append((f"{NAME}/{name}", f.read()))
    schemas = os.path.join(os.path.dirname(ROOT), "schemas")  # the published JSON Schemas travel along
    if os.path.isdir(schemas):
        for name in sorted(os.listdir(schemas)):
            if name.endswith(".json"):
                with open(os.path.join(schemas, name), "rb") as f:
                    out.append((f"{NAME}/schemas/{name}", f.read()))
    return out


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(f"{NAME}.pth", (ROOT + "\n").encode())])
