"""The run report `fusion-cli run --json OUT` writes, read in Python through its published JSON Schema
(schemas/run-report.schema.json): a report of another format or version, or one the schema rejects, raises
SchemaError naming the JSON pointer of the offending value. The fields are the schema's; nothing is guessed."""
import json

from . import schema

FORMAT = "fusion-explorer/run"
VERSION = 1


def parse_run_report(doc):
    """Checks a report already parsed from JSON and returns it. Raises SchemaError."""
    if not isinstance(doc, dict):
        raise schema.SchemaError("/: a run report is a JSON object")
    if doc.get("format") != FORMAT:
        raise schema.SchemaError(f"/format: not a run report: it names {doc.get('format')!r}, not {FORMAT!r}")
    if doc.get("version") != VERSION:
        raise schema.SchemaError(f"/version: this run report is version {doc.get('version')!r}; this package reads "
                                 f"version {VERSION}: run the graph again with a fusion-cli of this version")
    if schema.check(doc, "run_report") is None:
        raise schema.SchemaError("/: schemas/run-report.schema.json is not published here: cannot check the report")
    return doc


def load_run_report(path):
    """The report in the file at `path`, checked against the schema."""
    with open(path, encoding="utf-8") as f:
        return parse_run_report(json.load(f))

