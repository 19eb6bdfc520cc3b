#!/usr/bin/env python3
"""Checks layout reports against docs/layout-report.schema.json, and the example in
docs/layout-report.md against it too, so that the code, the schema and the document agree.

Implements the part of JSON Schema the schema uses (type, const, enum, pattern, required,
properties, additionalProperties: false, items, $ref to #/$defs), so that no package is needed.

usage: check_schema.py SCHEMA [--doc DOC.md] REPORT.json...
"""
import json
import re
import sys

TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def is_type(value, name):
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, TYPES[name])


def check(value, schema, root, path, errors):
    if "$ref" in schema:
        schema = root["$defs"][schema["$ref"].split("/")[-1]]
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(is_type(value, n) for n in names):
            errors.append(f"{path}: {value!r} is not of type {schema['type']}")
            return
    if "pattern" in schema and not re.search(schema["pattern"], value):
        errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing '{key}'")
        props = schema.get("properties", {})
        for key, v in value.items():
            if key in props:
                check(v, props[key], root, f"{path}.{key}", errors)
            elif schema.get("additionalProperties") is False:
                errors.append(f"{path}: unexpected '{key}'")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            check(v, schema["items"], root, f"{path}[{i}]", errors)


def doc_example(path):
    """The first ```json block of the document, its // comments removed."""
    text = open(path).read()
    block = re.search(r"```json\n(.*?)```", text, re.S).group(1)
    out = []
    for line in block.splitlines():
        in_string = False
        for i, c in enumerate(line):
            if c == '"' and (i == 0 or line[i - 1] != "\\"):
                in_string = not in_string
            elif not in_string and line.startswith("//", i):
                line = line[:i]
                break
        out.append(line)
    return json.loads("\n".join(out))


def main():
    args = sys.argv[1:]
    schema = json.load(open(args.pop(0)))
    inputs = []
    if args and args[0] == "--doc":
        args.pop(0)
        doc = args.pop(0)
        inputs.append((doc, doc_example(doc)))
    inputs += [(p, json.load(open(p))) for p in args]
    failed = 0
    for name, value in inputs:
        errors = []
        check(value, schema, schema, "$", errors)
        for e in errors[:20]:
            print(f"{name}: {e}")
        failed += bool(errors)
    print(f"schema: {len(inputs)} checked, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
