#!/usr/bin/env python3
"""Checks the JSON Schemas under schemas/ against the programs that read and write the formats.

- every schema is a valid draft 2020-12 schema;
- every shipped lesson (lessons/*.json) validates against lesson.schema.json;
- every sample graph, every test file the loader accepts, and what `fusion-cli fuse -o` and
  `fusion-cli device` write, validate against their schema (the schema is never stricter than the reader);
- every test file the loader rejects is rejected by the schema too, except those listed in SEMANTIC below:
  rules a JSON Schema cannot state (shape inference, cycles, name resolution), each with its reason.

usage: validate_schemas.py REPO_ROOT FUSION_CLI WORK_DIR
"""
import json
import pathlib
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    sys.exit("validate_schemas: python3-jsonschema is missing (scripts/install-deps.sh installs it)")
if not hasattr(jsonschema, "Draft202012Validator"):  # before 4.0 (Ubuntu 22.04 ships 3.2): say so and skip
    print("validate_schemas: skipped: this jsonschema (" + getattr(jsonschema, "__version__", "?") + ") has no draft "
          "2020-12 validator; jsonschema 4 or newer has one (pip install 'jsonschema>=4')")
    sys.exit(77)

try:  # jsonschema >= 4.18
    from referencing import Registry, Resource

    def make_validator(schemas, schema):
        registry = Registry().with_resources(
            (s.get("$id", name), Resource.from_contents(s)) for name, s in schemas.items())
        return jsonschema.Draft202012Validator(schema, registry=registry)
except ImportError:  # Debian 12's python3-jsonschema 4.10
    def make_validator(schemas, schema):
        store = {s.get("$id", name): s for name, s in schemas.items()}
        resolver = jsonschema.RefResolver.from_schema(schema, store=store)
        return jsonschema.Draft202012Validator(schema, resolver=resolver)

# Bad test files the schema cannot reject, and why. A file listed here that the schema does reject is an
# error too, so the list stays true.
SEMANTIC = {
    "bad/axis_out_of_range.json": "an axis is checked against the input's rank (shape inference)",
    "bad/duplicate_attribute_key.json": "JSON Schema sees a parsed object, where a repeated key is already gone",
    "bad/duplicate_key_in_shape_input.json": "JSON Schema sees a parsed object, where a repeated key is already gone",
    "bad/duplicate_key_nodes.json": "JSON Schema sees a parsed object, where a repeated key is already gone",
    "bad/duplicate_key_op.json": "JSON Schema sees a parsed object, where a repeated key is already gone",
    "bad/inferred_rank_too_large.json": "the rank is that of an inferred shape (shape inference)",
    "bad-fused/decision_step_too_large.json": "a step's bound depends on the decision log as a whole",
    "bad-fused/recompute_listed_twice.json": "names in a list are resolved against the graph",
    "bad-fused/recompute_matmul.json": "which ops can be recomputed is the registry's",
    "bad-fused/recompute_own_consumer.json": "what a recomputed node feeds is a property of the graph",
    "bad-fused/recompute_own_node.json": "group membership is resolved by name across two lists",
    "bad-fused/recompute_sort.json": "which ops can be recomputed is the registry's",
    "bad/broadcast_overflow.json": "shapes are combined by shape inference",
    "bad/byte_size_overflow.json": "the byte size depends on dims and dtype together",
    "bad/concat_overflow.json": "the concatenated size is computed by shape inference",
    "bad/conv_dilation_overflow.json": "a window's extent is computed by shape inference",
    "bad/conv_groups_overflow.json": "channel counts are checked by shape inference",
    "bad/conv_padding_overflow.json": "a window's extent is computed by shape inference",
    "bad/cycle.json": "a cycle is a property of the whole graph",
    "bad/self_cycle.json": "a node reading itself is resolved by name",
    "bad/dropout_p_out_of_range.json": "attribute ranges are per op (the registry's inference)",
    "bad/dtype_mismatch.json": "operand dtypes are compared by shape inference",
    "bad/duplicate_input_name.json": "names must be unique across two arrays",
    "bad/element_count_overflow.json": "the element count is a product of dims",
    "bad/matmul_inner_mismatch.json": "shapes are combined by shape inference",
    "bad/missing_attribute.json": "required attributes are per op (the registry)",
    "bad/node_shadows_input.json": "names must be unique across two arrays",
    "bad/output_names_nothing.json": "outputs are resolved by name",
    "bad/scalar_where_not_allowed.json": "where a number literal may stand is per op",
    "bad/shape_mismatch.json": "shapes are combined by shape inference",
    "bad/stated_shape_differs.json": "a stated shape is compared with the inferred one",
    "bad/unknown_attribute.json": "attribute names are per op (the registry)",
    "bad/unknown_input.json": "inputs are resolved by name",
    "bad/attribute_wrong_type.json": "attribute types are per op (the registry)",
    "bad/wrong_arity.json": "arity is per op (the registry)",
    "bad/deep_nesting_metadata.json": "the nesting depth is a reader's limit against hostile files",
    "bad/attribute_beyond_int64.json": "a number cannot tell 1e20 (a float, allowed) from an integer literal beyond int64",
    "bad/literal_beyond_int64.json": "a number cannot tell 1e20 (a float, allowed) from an integer literal beyond int64",
    "bad-fused/groups_in_a_cycle.json": "a cycle between groups is a property of the whole plan",
    "bad-fused/node_in_no_group.json": "a partition covers every node of the graph",
    "bad-fused/node_in_two_groups.json": "a partition is checked across groups",
    "bad-fused/unknown_node_in_group.json": "group members are resolved by name",
}


def load_schemas(root):
    schemas = {}
    for path in sorted((root / "schemas").glob("*.schema.json")):
        schema = json.loads(path.read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        schemas[path.name] = schema
    return schemas


def loader_accepts(cli, path):
    """The reader's verdict: `fusion-cli analyze` loads plain and fused graphs."""
    r = subprocess.run([cli, "analyze", str(path)], capture_output=True, timeout=120)
    return r.returncode == 0


def schema_errors(validators, doc):
    name = "fused-graph.schema.json" if isinstance(doc, dict) and "fusion" in doc else "graph.schema.json"
    return [f"{'/'.join(map(str, e.absolute_path)) or '(document)'}: {e.message}"
            for e in validators[name].iter_errors(doc)]


def parse(path):
    try:
        return json.loads(path.read_bytes().decode("utf-8"), parse_constant=lambda c: float(c))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def test_files(root):
    data = root / "tests" / "data"
    limited = set()
    for sub in ("bad", "bad-fused"):
        for entry in json.loads((data / sub / "expected.json").read_text())["files"]:
            if entry.get("limits"):
                limited.add(f"{sub}/{entry['file']}")
    for sub in ("bad", "bad-fused", "fuzz-regressions", "fuzz-regressions-fused"):
        for path in sorted((data / sub).glob("*.json")):
            key = f"{sub}/{path.name}"
            if path.name != "expected.json" and key not in limited:
                yield key, path


def main():
    root, cli, work = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3])
    work.mkdir(parents=True, exist_ok=True)
    schemas = load_schemas(root)
    validators = {n: make_validator(schemas, s) for n, s in schemas.items()}
    failures = []

    def expect_valid(label, doc, schema=None):
        errors = ([f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validators[schema].iter_errors(doc)]
                  if schema else schema_errors(validators, doc))
        if errors:
            failures.append(f"{label} does not match its schema: {errors[:3]}")

    samples = sorted((root / "sample_graphs").glob("*.json"))
    for path in samples:
        expect_valid(f"sample_graphs/{path.name}", parse(path))
    checked_bad = 0
    for key, path in test_files(root):
        doc = parse(path)
        accepted = loader_accepts(cli, path)
        if accepted:
            expect_valid(key + " (the loader accepts it)", doc)
            continue
        if doc is None:
            continue  # not JSON at all: nothing for a schema to say
        rejected = bool(schema_errors(validators, doc))
        checked_bad += 1
        if key in SEMANTIC and rejected:
            failures.append(f"{key} is listed as beyond the schema ({SEMANTIC[key]}) but the schema rejects it")
        elif key not in SEMANTIC and not rejected:
            failures.append(f"{key}: the loader rejects it, the schema accepts it")
    for key in SEMANTIC:
        if not (root / "tests" / "data" / key).exists():
            failures.append(f"{key} is listed in SEMANTIC but does not exist")

    for sample in ("relu_mul_add.json", "gpt2_block.json", "conv_bn_relu.json"):
        out = work / sample.replace(".json", ".fused.json")
        r = subprocess.run([cli, "fuse", str(root / "sample_graphs" / sample), "--auto", "-o", str(out)],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            failures.append(f"fusion-cli fuse {sample} failed: {r.stderr}")
            continue
        expect_valid(f"fusion-cli fuse {sample} -o", json.loads(out.read_text()), "fused-graph.schema.json")
    for preset in ("h100", "h200", "a100", "4090", "l4"):
        r = subprocess.run([cli, "device", preset], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            failures.append(f"fusion-cli device {preset} failed: {r.stderr}")
            continue
        written = work / f"{preset}.device.json"
        written.write_text(r.stdout)
        expect_valid(f"fusion-cli device {preset}", json.loads(r.stdout), "device.schema.json")
        again = subprocess.run([cli, "device", str(written)], capture_output=True, text=True, timeout=60)
        piped = subprocess.run([cli, "device", "-"], input=r.stdout, capture_output=True, text=True, timeout=60)
        if again.stdout != r.stdout or piped.stdout != r.stdout:
            failures.append(f"the device file of {preset} does not read back as written: {again.stderr}{piped.stderr}")
    for bad in ({"format": "fusion-explorer/device", "name": "no version"},
                {"format": "fusion-explorer/device", "version": 2, "name": "x"}):
        if not list(validators["device.schema.json"].iter_errors(bad)):
            failures.append(f"the device schema accepts {bad}")

    lessons = sorted((root / "lessons").glob("*.json"))
    for path in lessons:
        expect_valid(f"lessons/{path.name}", parse(path), "lesson.schema.json")
    if not lessons:
        failures.append("no lessons found in lessons/")
    for bad in ({"format": "fusion-explorer/lesson", "version": 1, "title": "t", "graph": "g",
                 "steps": [{"kind": "predict", "title": "t", "text": "a predict step without a quantity"}]},
                {"format": "fusion-explorer/lesson", "version": 1, "title": "t", "graph": "g",
                 "steps": [{"kind": "explain", "title": "t", "text": "x", "answer": 42}]}):
        if not list(validators["lesson.schema.json"].iter_errors(bad)):
            failures.append(f"the lesson schema accepts {bad}")

    print(f"{len(schemas)} schemas; {len(lessons)} lessons; {len(samples)} samples, {checked_bad} rejected test files compared")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
