#!/usr/bin/env python3
"""Prints the GATT tree recorded in a peer's log in one canonical form, so the runner can compare what a central
discovered with what the peripheral itself serves:

    TREE service START-END UUID
    TREE characteristic VALUE-HANDLE PROPERTIES(decimal) UUID
    TREE descriptor HANDLE UUID

    gatt_tree.py LOG

LOG holds either such 'TREE' lines (peers/*.py, interop-central) or the JSON lines of `ble serve --json` / `ble
explore --json` ("kind": service, characteristic or descriptor; properties as an array of names; handles as numbers).
Exits 1 when LOG has none.
"""
import json, sys

PROPERTIES = {'broadcast': 0x01, 'read': 0x02, 'writeWithoutResponse': 0x04, 'write': 0x08, 'notify': 0x10,
              'indicate': 0x20, 'signedWrite': 0x40, 'extended': 0x80}


def lines(path):
    with open(path, errors='replace') as f:
        for line in f:
            line = line.strip()
            if line.startswith('TREE '):
                yield line
            elif line.startswith('{') and '"kind"' in line:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                kind = record.get('kind')
                if kind == 'service':
                    yield f"TREE service {record['start']}-{record['end']} {record['uuid']}"
                elif kind == 'characteristic':
                    names = record.get('properties', [])
                    yield f"TREE characteristic {record['handle']} {sum(PROPERTIES[n] for n in names)} {record['uuid']}"
                elif kind == 'descriptor':
                    yield f"TREE descriptor {record['handle']} {record['uuid']}"


tree = list(lines(sys.argv[1]))
print('\n'.join(tree))
sys.exit(0 if tree else 1)
