"""A small JSON Schema (draft 2020-12) validator for the repository's published schemas, so the package needs
nothing but the standard library. It covers the keywords those schemas use: type, enum, const, properties,
required, additionalProperties, patternProperties, items, prefixItems, minItems, maxItems, minimum, maximum,
exclusiveMinimum, minLength, pattern, allOf, anyOf, oneOf, not, if/then/else, $ref (local "#/..." pointers, and
"other.schema.json#/..." for a schema file beside the one being used) and $defs. An unknown keyword is ignored,
as the specification says (unevaluatedProperties among them: annotations are not collected).
"""
import json
import os
import re

# Schema file names, by document kind; the first that exists is used.
SCHEMA_FILES = {
    "graph": ("graph.schema.json",),
    "fused_graph": ("fused_graph.schema.json", "fused-graph.schema.json", "plan.schema.json"),
    "inductor_capture": ("inductor_capture.schema.json",),
    "run_report": ("run-report.schema.json",),
}


class SchemaError(ValueError):
    """A document the schema rejects; the message starts with the JSON pointer of the offending value."""


def schema_dir():
    """FX_SCHEMAS, else schemas/ of the repository this package sits in, else the copy an installed package
    carries."""
    if os.environ.get("FX_SCHEMAS"):
        return os.environ["FX_SCHEMAS"]
    here = os.path.dirname(os.path.abspath(__file__))
    in_repo = os.path.join(os.path.dirname(os.path.dirname(here)), "schemas")
    return in_repo if os.path.isdir(in_repo) else os.path.join(here, "schemas")


def find_schema(kind, directory=None):
    directory = directory or schema_dir()
    for name in SCHEMA_FILES.get(kind, ()):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    return None


_cache = {}


def check(doc, kind, directory=None):
    """Validates doc against the published schema for `kind`. Returns the schema's path, or None when no
    schema is published (then only the readers' own checks apply). Raises SchemaError."""
    path = find_schema(kind, directory)
    if path is None:
        return None
    if path not in _cache:
        with open(path) as f:
            _cache[path] = json.load(f)
    validate(doc, _cache[path], os.path.dirname(path))
    return path


_base = {"dir": None}  # where "other.schema.json#..." references are looked up during one validate()


def validate(instance, schema, directory=None):
    _base["dir"] = directory
    errors = list(_errors(instance, schema, schema, ""))
    if errors:
        raise SchemaError(errors[0])


def _load_sibling(name):
    if _base["dir"] is None:
        raise SchemaError(f"$ref to {name!r}: no schema directory to look it up in")
    path = os.path.join(_base["dir"], name)
    if path not in _cache:
        with open(path) as f:
            _cache[path] = json.load(f)
    return _cache[path]


def _type_ok(value, t):
    if isinstance(t, list):
        return any(_type_ok(value, x) for x in t)
    if t == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    return {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
    }.get(t, lambda v: True)(value)


def _resolve(root, ref):
    """The schema a $ref names, and the document it sits in (the root for its own references)."""
    name, _, fragment = ref.partition("#")
    if name:
        root = _load_sibling(os.path.basename(name))
    node = root
    for token in fragment.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node, root


def _errors(v, s, root, at):
    """Yields one message per violated keyword (the first is reported)."""
    if s is True or s is None:
        return
    if s is False:
        yield f"{at or '/'}: no value is allowed here"
        return
    if "$ref" in s:
        target, target_root = _resolve(root, s["$ref"])
        yield from _errors(v, target, target_root, at)
    where = at or "/"
    if "type" in s and not _type_ok(v, s["type"]):
        yield f"{where}: must be of type {s['type']}, got {type(v).__name__}"
        return
    if "const" in s and v != s["const"]:
        yield f"{where}: must be {s['const']!r}"
    if "enum" in s and v not in s["enum"]:
        yield f"{where}: {v!r} is not one of {s['enum']}"
    yield from _number_errors(v, s, where)
    if isinstance(v, str):
        if len(v) < s.get("minLength", 0):
            yield f"{where}: shorter than {s['minLength']} characters"
        if "pattern" in s and not re.search(s["pattern"], v):
            yield f"{where}: {v!r} does not match {s['pattern']!r}"
    if isinstance(v, dict):
        yield from _object_errors(v, s, root, at)
    if isinstance(v, list):
        yield from _array_errors(v, s, root, at)
    yield from _combinator_errors(v, s, root, at)


def _number_errors(v, s, where):
    if not _type_ok(v, "number"):
        return
    if "minimum" in s and v < s["minimum"]:
        yield f"{where}: {v} is below the minimum {s['minimum']}"
    if "maximum" in s and v > s["maximum"]:
        yield f"{where}: {v} is above the maximum {s['maximum']}"
    if "exclusiveMinimum" in s and v <= s["exclusiveMinimum"]:
        yield f"{where}: {v} must be above {s['exclusiveMinimum']}"


def _object_errors(v, s, root, at):
    for key in s.get("required", []):
        if key not in v:
            yield f"{at or '/'}: missing field {key!r}"
    props = s.get("properties", {})
    patterns = s.get("patternProperties", {})
    for key, value in v.items():
        child = f"{at}/{key.replace('~', '~0').replace('/', '~1')}"
        matched = False
        if key in props:
            matched = True
            yield from _errors(value, props[key], root, child)
        for pattern, sub in patterns.items():
            if re.search(pattern, key):
                matched = True
                yield from _errors(value, sub, root, child)
        if not matched and "additionalProperties" in s:
            extra = s["additionalProperties"]
            if extra is False:
                yield f"{child}: unknown field {key!r}"
            else:
                yield from _errors(value, extra, root, child)


def _array_errors(v, s, root, at):
    if len(v) < s.get("minItems", 0):
        yield f"{at or '/'}: fewer than {s['minItems']} items"
    if "maxItems" in s and len(v) > s["maxItems"]:
        yield f"{at or '/'}: more than {s['maxItems']} items"
    prefix = s.get("prefixItems", [])
    for i, item in enumerate(v):
        if i < len(prefix):
            yield from _errors(item, prefix[i], root, f"{at}/{i}")
        elif "items" in s:
            yield from _errors(item, s["items"], root, f"{at}/{i}")


def _combinator_errors(v, s, root, at):
    where = at or "/"
    for sub in s.get("allOf", []):
        yield from _errors(v, sub, root, at)
    if "anyOf" in s and not any(not list(_errors(v, sub, root, at)) for sub in s["anyOf"]):
        yield f"{where}: matches none of the allowed forms (anyOf)"
    if "oneOf" in s:
        passing = sum(1 for sub in s["oneOf"] if not list(_errors(v, sub, root, at)))
        if passing != 1:
            yield f"{where}: matches {passing} of the forms where exactly one must match (oneOf)"
    if "not" in s and not list(_errors(v, s["not"], root, at)):
        yield f"{where}: matches a form that is not allowed (not)"
    if "if" in s:
        branch = "then" if not list(_errors(v, s["if"], root, at)) else "else"
        if branch in s:
            yield from _errors(v, s[branch], root, at)
