#!/usr/bin/env python3
"""Checks which GPU architectures the ahead-of-time CUDA kernels were built for: reads the .nv_fatbin section of
each given object (objcopy) and lists its entries (kind 1: PTX, kind 2: SASS ELF; the architecture at offset 28
of an entry's header, as the CUDA fatbin container lays it out), then compares them with a CMake
CUDA_ARCHITECTURES list: "80-real" wants SASS for sm_80, "90-virtual" PTX for compute_90, "90" both.

usage: fatbin_archs.py 'ARCH;ARCH...' OBJECT...   (exit 77, skipped, for "native", "all" or "all-major")"""
import struct
import subprocess
import sys
import tempfile

MAGIC = 0xBA55ED50
KINDS = {1: "ptx", 2: "sass"}


def entries(path):
    with tempfile.NamedTemporaryFile() as out:
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", path, out.name], check=True)
        data = open(out.name, "rb").read()
    found, off = set(), 0
    while off + 16 <= len(data):
        magic, _, header, size = struct.unpack_from("<IHHQ", data, off)
        if magic != MAGIC:
            off += 8
            continue
        p, end = off + header, off + header + size
        while p < end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, p)
            arch = struct.unpack_from("<I", data, p + 28)[0]
            found.add((KINDS.get(kind, str(kind)), arch))
            p += entry_header + payload
        off = end
    return found


def wanted(cmake_list):
    want = set()
    for item in cmake_list.split(";"):
        number, _, suffix = item.partition("-")
        if suffix in ("", "real"):
            want.add(("sass", int(number)))
        if suffix in ("", "virtual"):
            want.add(("ptx", int(number)))
    return want


def main():
    archs, objects = sys.argv[1], sys.argv[2:]
    if archs in ("native", "all", "all-major"):
        print(f"CUDA_ARCHITECTURES={archs}: depends on the machine; skipped")
        return 77
    want = wanted(archs)
    objects = [o for o in objects if o.endswith(".cu.o")]
    if not objects:
        print("no CUDA objects given")
        return 1
    status = 0
    for obj in objects:
        have = entries(obj)
        print(obj.rsplit("/", 1)[-1], sorted(have))
        if want - have:
            print("  MISSING:", sorted(want - have))
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
