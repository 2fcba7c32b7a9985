#!/usr/bin/env python3
"""schema_check.py SCHEMA FILE... - validate oomscan's real output against docs/oomscan.schema.json.

Each FILE holds JSON documents one after another (--format json, concatenated) or NDJSON records;
every value read is checked against the schema (a document by its 'schema' key, a record by its
'type'). Prints each failure with the file, the value's position and the key path, and exits 1 on
any; 2 when the schema itself is not a valid JSON Schema or a file is not JSON.
"""
import json
import sys

import jsonschema


def values(path):
    """Every JSON value in the file, concatenated or one a line."""
    text = open(path, encoding="utf-8", errors="surrogateescape").read()
    dec = json.JSONDecoder()
    i, n = 0, 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return
        value, i = dec.raw_decode(text, i)
        n += 1
        yield n, value


def main(argv):
    schema = json.load(open(argv[1], encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as e:
        print(f"{argv[1]}: not a valid JSON Schema: {e.message}")
        return 2
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    bad = checked = 0
    for path in argv[2:]:
        try:
            for n, value in values(path):
                checked += 1
                for err in validator.iter_errors(value):
                    bad += 1
                    where = "/".join(str(p) for p in err.absolute_path)
                    print(f"{path}: value {n}: /{where}: {err.message[:300]}")
                    if bad > 40:
                        print("... more")
                        return 1
        except json.JSONDecodeError as e:
            print(f"{path}: not JSON: {e}")
            return 2
    print(f"{checked} value(s) checked against {argv[1]}: {bad} problem(s)")
    return 1 if bad or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
