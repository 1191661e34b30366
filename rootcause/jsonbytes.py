"""JSON as UTF-8 bytes, for the files the build writes and reads back by the thousand (entry
records, the site model, search shards, index sections, signatures.json).

Written and read by orjson, a compiled library: on a 10,000-entry build it writes these in a
sixth of the time of the standard `json` module and reads them in two thirds. Its text is what
`json.dumps(value, ensure_ascii=False, separators=(",", ":"))` gives, byte for byte, except for
some floats below 1e-4, the same numbers written otherwise (`0.00001` for `1e-05`, `1e-6` for
`1e-06`). A value orjson does not write (an integer of more than 64 bits) is written by `json`;
read back, such an integer is a float. No file the build writes holds one: the numbers of an
entry are bounded by its schema, stat keys fit in 64 bits.
"""

from __future__ import annotations

import json

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS   # keys that are numbers or None become text, as with `json`


def dumps(value, sort_keys: bool = False) -> bytes:
    """`value` as compact JSON in UTF-8 (non-ASCII text as it is); keys sorted with `sort_keys`."""
    try:
        data = orjson.dumps(value, option=_OPTIONS | orjson.OPT_SORT_KEYS if sort_keys else _OPTIONS)
    except orjson.JSONEncodeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys).encode("utf-8")
    # orjson's bytes keep the buffer it wrote into, 4 KB or more however short the text: kept by
    # the thousand (an entry's signature parts, index rows) that was 40-60 MB more at 10,000
    # entries. A copy of the exact size lets the buffer go at once, for the next call to reuse.
    return memoryview(data).tobytes()


def loads(data: bytes | str):
    """The value of a JSON text; ValueError (orjson's JSONDecodeError is a `json.JSONDecodeError`)
    when it is not one, as for invalid UTF-8, NaN or nesting deeper than 1,024."""
    return orjson.loads(data)
