#!/usr/bin/env python3
"""Checks the layer order of DESIGN.md / docs/architecture.md over #include lines.

Each source file belongs to a layer by its path; a file may include headers of
its own layer and of the layers listed as below it. Prints every violation
(file:line, the include, both layers) and exits 1 if there is any.
"""
import os
import re
import sys

# Layers, lowest first, with the path prefixes that belong to them.
LAYERS = [
    ("core", ["hub/core/"]),
    ("tensor", ["hub/tensor/"]),
    ("ops", ["hub/ops/"]),                       # op definitions, shape fns, gradients (not kernels)
    ("kernels", ["hub/ops/cpu/", "hub/ops/onednn/", "hub/ops/cuda/"]),
    ("backend", ["hub/backend/"]),
    ("graph", ["hub/graph/"]),
    ("image", ["hub/image/"]),
    ("signatures", ["signatures/"]),
    ("module", ["hub/module/"]),
    ("interop", ["hub/interop/"]),
    ("resolver", ["hub/resolver/"]),
    ("train", ["modules/", "retrain/"]),
    ("registry", ["registry/"]),
    ("cli", ["cli/"]),
]

# What each layer may include besides itself.
ALLOWED = {
    "core": set(),
    "tensor": {"core"},
    "ops": {"core", "tensor"},
    "kernels": {"core", "tensor", "ops"},      # nothing else includes a backend's kernels
    "backend": {"core", "tensor", "ops"},
    "graph": {"core", "tensor", "ops", "backend"},
    "image": {"core", "tensor"},
    "signatures": {"core"},
    "module": {"core", "tensor", "ops", "backend", "graph", "signatures"},
    "interop": {"core", "tensor", "ops", "backend", "graph", "signatures", "module"},
    "resolver": {"core", "tensor", "ops", "backend", "graph", "signatures", "module", "interop"},
    "train": {"core", "tensor", "ops", "backend", "graph", "image", "signatures", "module", "interop", "resolver"},
    "registry": {"core", "tensor", "ops", "backend", "graph", "signatures", "module", "interop", "resolver"},
    "cli": {l for l, _ in LAYERS} - {"cli", "kernels"},
}


def layer_of(path):
    best = None
    for name, prefixes in LAYERS:
        for p in prefixes:
            if path.startswith(p) and (best is None or len(p) > best[1]):
                best = (name, len(p))
    return best[0] if best else None


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    os.chdir(root)
    include = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    violations = []
    for top in ["hub", "signatures", "modules", "retrain", "registry", "cli"]:
        for dirpath, _, files in os.walk(top):
            for f in files:
                if not f.endswith((".h", ".cc", ".cu", ".cuh")):
                    continue
                path = os.path.join(dirpath, f)
                src = layer_of(path)
                with open(path, encoding="utf-8") as fh:
                    for lineno, line in enumerate(fh, 1):
                        m = include.match(line)
                        if not m:
                            continue
                        dst = layer_of(m.group(1))
                        if dst is None or dst == src or dst in ALLOWED[src]:
                            continue
                        violations.append(f"{path}:{lineno}: includes {m.group(1)} ({src} may not include {dst})")
    for v in violations:
        print(v)
    if violations:
        print(f"{len(violations)} layer violation(s); the order is in docs/architecture.md")
        return 1
    print("layer order ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
