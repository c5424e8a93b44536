"""Fusion Explorer's file formats in plain Python: the graph (version 1) and the fused graph (a graph with a
"fusion" section, i.e. a plan). One writer (GraphWriter, write_json) and one reader (read_graph, read_plan) that
every Python tool here uses. No torch, so it runs and is tested anywhere.

A document is checked against the published JSON Schema when one is found (schemas/ in the repository, or the
directory named by FX_SCHEMAS), with the small validator in schema.py; the C++ loader (`fusion-cli validate`)
remains the authority on shapes and op semantics.
"""
import json

from . import schema

FORMAT = "fusion-explorer/graph"
VERSION = 1
DTYPES = ("f32", "f16", "bf16", "i32", "i64", "bool")
ROLES = ("activation", "weight", "constant")
# Who made a plan: our engine, a person, or a compiler whose decisions were recorded.
PLAN_SOURCES = ("fusion-explorer", "user", "inductor")


class FormatError(ValueError):
    """A document that is not a valid graph or plan; the message starts with a JSON pointer."""


class Ref:
    """A tensor in the graph being written, by name."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Ref({self.name!r})"

    def __eq__(self, other):
        return isinstance(other, Ref) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


class GraphWriter:
    """Collects inputs, nodes and outputs, names them uniquely, and writes the format's JSON object.

    `origin` is the name of the program node being translated (e.g. an FX node); every node added while it is
    set is recorded under it in `origins`, so a compiler's decisions about that program node can be mapped to
    the nodes written for it. `source` ("file:line") is stored on each node added while it is set."""

    def __init__(self, name, description=""):
        self.name, self.description = name, description
        self.inputs, self.nodes, self.outputs = [], [], []
        self.types = {}  # name -> (shape, dtype)
        self.used = set()
        self.origin, self.source = None, None
        self.origins = {}  # program node name -> [graph node names]

    def fresh(self, base):
        name, k = base, 2
        while name in self.used:
            name, k = f"{base}#{k}", k + 1
        self.used.add(name)
        return name

    def add_input(self, name, shape, dtype, role="activation"):
        name = self.fresh(name)
        entry = {"name": name, "shape": list(shape), "dtype": dtype}
        if role != "activation":
            entry["role"] = role
        self.inputs.append(entry)
        self.types[name] = (list(shape), dtype)
        return Ref(name)

    def add_node(self, name, op, inputs, attrs=None, shape=None, dtype=None):
        name = self.fresh(name)
        node = {"name": name, "op": op, "inputs": [i.name if isinstance(i, Ref) else float(i) for i in inputs]}
        if attrs:
            node["attrs"] = attrs
        if shape is not None:
            node["shape"], node["dtype"] = list(shape), dtype
            self.types[name] = (list(shape), dtype)
        if self.source:
            node["source"] = self.source
        self.nodes.append(node)
        if self.origin is not None:
            self.origins.setdefault(self.origin, []).append(name)
        return Ref(name)

    def drop_nodes_after(self, mark):
        """Removes nodes added after len(nodes) was `mark` (a mapping that gave up half way)."""
        dropped = {n["name"] for n in self.nodes[mark:]}
        del self.nodes[mark:]
        self.used -= dropped
        for name in dropped:
            self.types.pop(name, None)
        for names in self.origins.values():
            names[:] = [n for n in names if n not in dropped]

    def add_custom(self, name, label, inputs, shape, dtype):
        tensors = [i for i in inputs if isinstance(i, Ref)]
        return self.add_node(name, "custom", tensors, {"label": label}, shape, dtype)

    def to_json(self):
        return {"format": FORMAT, "version": VERSION, "name": self.name, "description": self.description,
                "inputs": self.inputs, "nodes": self.nodes, "outputs": self.outputs}


def write_json(doc, path):
    """Writes a graph or plan document, one key per line at the top, as the C++ writer does."""
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def _fail(pointer, message):
    raise FormatError(f"{pointer or '/'}: {message}")


def _check_schema(doc, kind):
    try:
        schema.check(doc, kind)
    except schema.SchemaError as e:
        raise FormatError(str(e)) from e


def check_graph(doc):
    """Structural checks of a graph document: names unique, inputs defined before use, outputs exist.
    Raises FormatError naming the first problem."""
    if not isinstance(doc, dict):
        _fail("", "a graph file is a JSON object")
    if doc.get("format") != FORMAT:
        _fail("/format", f"expected {FORMAT!r}, got {doc.get('format')!r}")
    if doc.get("version") != VERSION:
        _fail("/version", f"this reader reads version {VERSION}, got {doc.get('version')!r}")
    _check_schema(doc, "graph")
    defined = set()
    for i, e in enumerate(doc["inputs"]):
        if e["name"] in defined:
            _fail(f"/inputs/{i}/name", f"duplicate name {e['name']!r}")
        defined.add(e["name"])
    for i, n in enumerate(doc["nodes"]):
        if n["name"] in defined:
            _fail(f"/nodes/{i}/name", f"duplicate name {n['name']!r}")
        for k, a in enumerate(n["inputs"]):
            if isinstance(a, str) and a not in defined:
                _fail(f"/nodes/{i}/inputs/{k}", f"{a!r} is not defined before node {n['name']!r}")
        defined.add(n["name"])
    for i, o in enumerate(doc["outputs"]):
        if o not in defined:
            _fail(f"/outputs/{i}", f"no input or node named {o!r}")
    return doc


def check_plan(doc):
    """A graph with a "fusion" section whose groups name the graph's nodes, each node at most once.
    Inductor's plans may leave nodes it ran no kernel for (views) out of every group."""
    check_graph(doc)
    fusion = doc.get("fusion")
    if not isinstance(fusion, dict) or not isinstance(fusion.get("groups"), list):
        _fail("/fusion", "a plan has a \"fusion\" object with \"groups\"")
    _check_schema(doc, "fused_graph")
    source = fusion.get("source", "fusion-explorer")
    if source not in PLAN_SOURCES:
        _fail("/fusion/source", f"unknown source {source!r} ({', '.join(PLAN_SOURCES)})")
    nodes = {n["name"] for n in doc["nodes"]}
    owner = {}
    for i, g in enumerate(fusion["groups"]):
        for k, name in enumerate(g.get("nodes", [])):
            at = f"/fusion/groups/{i}/nodes/{k}"
            if name not in nodes:
                _fail(at, f"no node named {name!r} in the graph")
            if name in owner:
                _fail(at, f"node {name!r} is also in /fusion/groups/{owner[name]}: a plan is a partition")
            owner[name] = i
    for i, r in enumerate(fusion.get("pair_reasons", [])):
        for side in ("a", "b"):
            for k, name in enumerate(r.get(side, [])):
                if name not in nodes:
                    _fail(f"/fusion/pair_reasons/{i}/{side}/{k}", f"no node named {name!r} in the graph")
    return doc


def load_json(path_or_doc):
    if isinstance(path_or_doc, dict):
        return path_or_doc
    with open(path_or_doc) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise FormatError(f"{path_or_doc}: not valid JSON: line {e.lineno} column {e.colno}: {e.msg}") from e


def read_graph(path_or_doc):
    return check_graph(load_json(path_or_doc))


def read_plan(path_or_doc):
    return check_plan(load_json(path_or_doc))


def plan_groups(doc):
    """The plan's groups as lists of node names; nodes in no group become groups of their own."""
    groups = [list(g["nodes"]) for g in doc["fusion"]["groups"]]
    seen = {n for g in groups for n in g}
    groups += [[n["name"]] for n in doc["nodes"] if n["name"] not in seen]
    return groups

