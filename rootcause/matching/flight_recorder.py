"""PyTorch Flight Recorder dumps, read safely.

A dump is what `torch._C._distributed_c10d._dump_fr_trace()` (pickle) or `_dump_fr_trace_json()`
(JSON) returns, and what NCCL's watchdog writes per rank on a timeout (`TORCH_FR_DUMP_TEMP_FILE`
+ rank). A pickle is never given to Python's unpickler: `load_pickle` interprets the opcodes itself
and accepts only those that build plain data (dict, list, tuple, str, bytes, int, float, bool,
None, and the memo that lets one object be named twice); a global, a call, `__setstate__` or any
other opcode that could run code or make an object is refused before anything else is read.
Everything is bounded: the file's size, the nesting depth, the number of values the data expands
to (a memo can name one list many times), the length of every number.

`read_dump` gives a `Dump`: the rank (from the file's name, as torch's own tools read it: the
digits at the end), the format, the version, the entries normalised (JSON and pickle differ in
small ways: states of a process group as text or numbers, 0 or None for a time not seen, frames
present or not), the process groups' configuration and status. Every problem is a `DumpError`
with the file's name and a sentence; never a traceback.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the largest dump read (a 2,000-entry NCCL dump with stacks is a few MB)
MAX_DUMP_BYTES = 256 << 20
#: how deep containers may nest (a dump nests 5 deep)
MAX_DEPTH = 24
#: how many values the data may expand to, counting every time a memo names one again
MAX_VALUES_PER_BYTE = 4
MIN_VALUES = 200_000
#: digits of a number written as text, bytes of a binary one
MAX_NUMBER_CHARS = 64


class DumpError(Exception):
    """A file that is not a dump this reader can use; `str()` names the file and says why."""

    def __init__(self, name: str, message: str):
        super().__init__(f"{name}: {message}")
        self.name, self.message = name, message


class _Refused(Exception):
    pass


# --------------------------------------------------------------------------------------------
# the pickle opcodes a dump may use, by byte

_SAFE = {
    b"(": "MARK", b".": "STOP", b"0": "POP", b"1": "POP_MARK", b"2": "DUP",
    b"F": "FLOAT", b"I": "INT", b"J": "BININT", b"K": "BININT1", b"M": "BININT2", b"L": "LONG",
    b"\x8a": "LONG1", b"\x8b": "LONG4", b"N": "NONE", b"\x88": "NEWTRUE", b"\x89": "NEWFALSE",
    b"X": "BINUNICODE", b"\x8c": "SHORT_BINUNICODE", b"\x8d": "BINUNICODE8", b"V": "UNICODE",
    b"B": "BINBYTES", b"C": "SHORT_BINBYTES", b"\x8e": "BINBYTES8", b"T": "BINSTRING",
    b"U": "SHORT_BINSTRING", b"G": "BINFLOAT",
    b"]": "EMPTY_LIST", b"a": "APPEND", b"e": "APPENDS", b"l": "LIST",
    b")": "EMPTY_TUPLE", b"t": "TUPLE", b"\x85": "TUPLE1", b"\x86": "TUPLE2", b"\x87": "TUPLE3",
    b"}": "EMPTY_DICT", b"d": "DICT", b"s": "SETITEM", b"u": "SETITEMS",
    b"p": "PUT", b"q": "BINPUT", b"r": "LONG_BINPUT", b"g": "GET", b"h": "BINGET", b"j": "LONG_BINGET",
    b"\x94": "MEMOIZE", b"\x80": "PROTO", b"\x95": "FRAME",
}
#: opcodes that name a global, call one or build an object: a dump never needs them
_REFUSED = {
    b"c": "GLOBAL", b"\x93": "STACK_GLOBAL", b"R": "REDUCE", b"b": "BUILD", b"i": "INST",
    b"o": "OBJ", b"\x81": "NEWOBJ", b"\x92": "NEWOBJ_EX", b"\x82": "EXT1", b"\x83": "EXT2",
    b"\x84": "EXT4", b"P": "PERSID", b"Q": "BINPERSID", b"\x8f": "EMPTY_SET", b"\x90": "ADDITEMS",
    b"\x91": "FROZENSET", b"\x96": "BYTEARRAY8", b"\x97": "NEXT_BUFFER", b"\x98": "READONLY_BUFFER",
    b"S": "STRING",
}


def load_pickle(data: bytes, max_depth: int = MAX_DEPTH) -> Any:
    """The plain data a pickle holds, or `_Refused` with the reason (offset included)."""
    stack: list[Any] = []
    marks: list[int] = []
    memo: dict[int, Any] = {}
    pos, end = 0, len(data)

    def take(n: int) -> bytes:
        nonlocal pos
        if n < 0 or pos + n > end:
            raise _Refused(f"cut short: {n} bytes wanted at offset {pos}, the file ends at {end}")
        chunk = data[pos:pos + n]
        pos += n
        return chunk

    def line() -> bytes:
        nonlocal pos
        stop = data.find(b"\n", pos, pos + MAX_NUMBER_CHARS + 2)
        if stop < 0:
            raise _Refused(f"a text argument at offset {pos} is unterminated or longer than {MAX_NUMBER_CHARS} characters")
        chunk = data[pos:stop]
        pos = stop + 1
        return chunk

    def pop_mark() -> list[Any]:
        if not marks:
            raise _Refused(f"no MARK before offset {pos - 1}")
        start = marks.pop()
        items = stack[start:]
        del stack[start:]
        return items

    def pop() -> Any:
        if len(stack) <= (marks[-1] if marks else 0):
            raise _Refused(f"stack empty at offset {pos - 1}")
        return stack.pop()

    def top_container(kind: type) -> Any:
        if not stack or not isinstance(stack[-1], kind):
            raise _Refused(f"{kind.__name__} expected under the items at offset {pos - 1}")
        return stack[-1]

    def key_of(value: Any) -> Any:
        if isinstance(value, (str, int, float, bool, bytes)) or value is None:
            return value
        if isinstance(value, tuple) and all(isinstance(v, (str, int, float, bool, bytes)) or v is None for v in value):
            return value
        raise _Refused(f"a dictionary key that is a {type(value).__name__} at offset {pos - 1}")

    def push(value: Any) -> None:
        if len(marks) > max_depth:
            raise _Refused(f"nested deeper than {max_depth} at offset {pos - 1}")
        stack.append(value)

    while True:
        if pos >= end:
            raise _Refused(f"cut short: the file ends at offset {end} before the pickle's STOP")
        code = data[pos:pos + 1]
        pos += 1
        name = _SAFE.get(code)
        if name is None:
            refused = _REFUSED.get(code)
            if refused:
                raise _Refused(f"opcode {refused} at offset {pos - 1}: it imports or calls Python code, "
                               "which a Flight Recorder dump never does; refused, nothing was run")
            raise _Refused(f"unknown opcode byte 0x{code[0]:02x} at offset {pos - 1}")
        if name == "PROTO":
            version = take(1)[0]
            if version > 5:
                raise _Refused(f"pickle protocol {version} is not known")
        elif name == "FRAME":
            take(8)
        elif name == "STOP":
            if len(stack) != 1 or marks:
                raise _Refused(f"STOP at offset {pos - 1} leaves {len(stack)} values on the stack")
            return stack[0]
        elif name == "MARK":
            if len(marks) >= max_depth:
                raise _Refused(f"nested deeper than {max_depth} at offset {pos - 1}")
            marks.append(len(stack))
        elif name == "POP":
            pop()
        elif name == "POP_MARK":
            pop_mark()
        elif name == "DUP":
            value = pop()
            stack.append(value)
            push(value)
        elif name == "NONE":
            push(None)
        elif name == "NEWTRUE":
            push(True)
        elif name == "NEWFALSE":
            push(False)
        elif name == "BININT":
            push(struct.unpack("<i", take(4))[0])
        elif name == "BININT1":
            push(take(1)[0])
        elif name == "BININT2":
            push(struct.unpack("<H", take(2))[0])
        elif name in ("LONG1", "LONG4"):
            size = take(1)[0] if name == "LONG1" else struct.unpack("<i", take(4))[0]
            if size > MAX_NUMBER_CHARS or size < 0:
                raise _Refused(f"a number of {size} bytes at offset {pos}")
            push(int.from_bytes(take(size), "little", signed=True))
        elif name in ("INT", "LONG"):
            text = line().rstrip(b"L")
            if name == "INT" and text in (b"00", b"01"):
                push(text == b"01")
            else:
                try:
                    push(int(text))
                except ValueError:
                    raise _Refused(f"not a number at offset {pos}: {text[:20]!r}") from None
        elif name == "FLOAT":
            try:
                push(float(line()))
            except ValueError:
                raise _Refused(f"not a number at offset {pos}") from None
        elif name == "BINFLOAT":
            push(struct.unpack(">d", take(8))[0])
        elif name in ("BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"):
            size = (struct.unpack("<I", take(4))[0] if name == "BINUNICODE"
                    else take(1)[0] if name == "SHORT_BINUNICODE" else struct.unpack("<Q", take(8))[0])
            raw = take(size)
            try:
                push(raw.decode("utf-8", "surrogatepass"))
            except UnicodeDecodeError:
                raise _Refused(f"text that is not UTF-8 at offset {pos - size}") from None
        elif name == "UNICODE":
            stop = data.find(b"\n", pos)
            if stop < 0:
                raise _Refused(f"cut short: unterminated text at offset {pos}")
            raw = take(stop - pos)
            take(1)
            push(raw.decode("raw_unicode_escape"))
        elif name in ("BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BINSTRING", "SHORT_BINSTRING"):
            size = (take(1)[0] if name in ("SHORT_BINBYTES", "SHORT_BINSTRING")
                    else struct.unpack("<Q", take(8))[0] if name == "BINBYTES8"
                    else struct.unpack("<I", take(4))[0])
            push(bytes(take(size)))
        elif name == "EMPTY_LIST":
            push([])
        elif name == "EMPTY_TUPLE":
            push(())
        elif name == "EMPTY_DICT":
            push({})
        elif name == "APPEND":
            value = pop()
            top_container(list).append(value)
        elif name == "APPENDS":
            items = pop_mark()
            top_container(list).extend(items)
        elif name == "LIST":
            items = pop_mark()
            push(items)
        elif name == "TUPLE":
            items = pop_mark()
            push(tuple(items))
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            n = int(name[-1])
            items = [pop() for _ in range(n)][::-1]
            push(tuple(items))
        elif name == "DICT":
            items = pop_mark()
            if len(items) % 2:
                raise _Refused(f"an odd number of items for a dictionary at offset {pos - 1}")
            push({key_of(items[i]): items[i + 1] for i in range(0, len(items), 2)})
        elif name == "SETITEM":
            value, key = pop(), pop()
            top_container(dict)[key_of(key)] = value
        elif name == "SETITEMS":
            items = pop_mark()
            if len(items) % 2:
                raise _Refused(f"an odd number of items for a dictionary at offset {pos - 1}")
            target = top_container(dict)
            for i in range(0, len(items), 2):
                target[key_of(items[i])] = items[i + 1]
        elif name in ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"):
            if len(stack) <= (marks[-1] if marks else 0):
                raise _Refused(f"nothing to remember at offset {pos - 1}")
            index = (len(memo) if name == "MEMOIZE" else take(1)[0] if name == "BINPUT"
                     else struct.unpack("<I", take(4))[0] if name == "LONG_BINPUT" else _int_line(line()))
            memo[index] = stack[-1]
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            index = (take(1)[0] if name == "BINGET" else struct.unpack("<I", take(4))[0]
                     if name == "LONG_BINGET" else _int_line(line()))
            if index not in memo:
                raise _Refused(f"memo {index} read before it was written, at offset {pos - 1}")
            push(memo[index])


def _int_line(text: bytes) -> int:
    try:
        return int(text)
    except ValueError:
        raise _Refused(f"not a memo index: {text[:20]!r}") from None


def check_shape(value: Any, max_values: int, max_depth: int = MAX_DEPTH) -> None:
    """Walk the data once, bounded: refuse a container that holds itself, nesting deeper than
    `max_depth`, or more than `max_values` values counted as often as a memo names them (so that
    every later pass over the data is bounded too)."""
    count = 0
    on_path: set[int] = set()
    todo: list[tuple[Any, int, bool]] = [(value, 0, False)]
    while todo:
        item, depth, leaving = todo.pop()
        if leaving:
            on_path.discard(id(item))
            continue
        count += 1
        if count > max_values:
            raise _Refused(f"the data expands to more than {max_values:,} values (a memo names the same "
                           "containers again and again)")
        if isinstance(item, (list, tuple, dict)):
            if id(item) in on_path:
                raise _Refused("a container holds itself")
            if depth >= max_depth:
                raise _Refused(f"nested deeper than {max_depth}")
            on_path.add(id(item))
            todo.append((item, depth, True))
            children = list(item.keys()) + list(item.values()) if isinstance(item, dict) else item
            todo.extend((child, depth + 1, False) for child in children)


# --------------------------------------------------------------------------------------------
# dumps

_JSON_START = re.compile(rb'\A\s*\{\s*"(comm_lib_version|entries|nccl_comm_state|pg_config|pg_status|version)"\s*:')
_RANK = re.compile(r"(\d+)(?:\.(?:json|pkl|pickle))?\Z")


def looks_like_dump(head: bytes) -> str | None:
    """'pickle', 'json' or None, from a file's first bytes: a pickle (protocol 2 or later starts
    with PROTO) is never a log; a JSON object whose first key is one a dump has."""
    if head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
        return "pickle"
    if _JSON_START.match(head[:4096]):
        return "json"
    return None


@dataclass(frozen=True)
class Frame:
    name: str
    filename: str
    line: int


@dataclass
class Entry:
    """One record of the ring buffer, the same whether it came from JSON or pickle."""

    record_id: int
    pg_id: int
    pg_name: str
    pg_desc: str
    collective_seq_id: int
    p2p_seq_id: int
    op_id: int
    profiling_name: str
    backend: str
    op: str
    peer: str
    is_p2p: bool
    input_sizes: list
    output_sizes: list
    input_dtypes: list
    output_dtypes: list
    state: str
    time_created_ns: int
    started_ns: int
    completed_ns: int
    timeout_ms: int
    frames: tuple[Frame, ...]

    @property
    def seq(self) -> int:
        return self.p2p_seq_id if self.is_p2p else self.collective_seq_id


@dataclass
class Dump:
    path: str
    rank: int
    format: str
    version: str
    entries: list[Entry]
    #: pg name -> (desc, ranks or None when the backend did not record them)
    pg_config: dict[str, tuple[str, tuple[int, ...] | None]]
    #: pg id (as text) -> {last_enqueued_collective, last_started_collective, last_completed_collective}
    pg_status: dict[str, dict[str, int]]
    comm_lib_version: str = ""
    notes: list[str] = field(default_factory=list)


def rank_from_name(name: str) -> int | None:
    match = _RANK.search(name)
    return int(match.group(1)) if match else None


def read_dump(path: Path | str, data: bytes | None = None, shown: str | None = None) -> Dump:
    """The dump in a file (or in `data`, its bytes), or DumpError naming the file."""
    path = Path(path)
    shown = shown or str(path)
    if data is None:
        from ..files import Refused, read_regular
        try:
            data = read_regular(path, MAX_DUMP_BYTES)
        except FileNotFoundError:
            raise DumpError(shown, "no such file") from None
        except Refused as refused:
            raise DumpError(shown, refused.message) from None
    return parse_dump(data, shown)


def parse_dump(data: bytes, shown: str) -> Dump:
    kind = looks_like_dump(data[:4096])
    if kind is None:
        raise DumpError(shown, "not a Flight Recorder dump (neither a pickle nor a JSON object with a dump's keys)")
    if len(data) > MAX_DUMP_BYTES:
        raise DumpError(shown, f"{len(data):,} bytes; the limit for a dump is {MAX_DUMP_BYTES:,}")
    try:
        if kind == "pickle":
            raw = load_pickle(data)
        else:
            try:
                raw = json.loads(data)
            except RecursionError:
                raise _Refused(f"nested deeper than {MAX_DEPTH}") from None
            except (ValueError, UnicodeDecodeError) as error:
                cut = " (cut short?)" if not data.rstrip().endswith(b"}") else ""
                raise _Refused(f"not valid JSON{cut}: {error}") from None
        check_shape(raw, max(MIN_VALUES, MAX_VALUES_PER_BYTE * len(data)))
    except _Refused as refused:
        raise DumpError(shown, f"{'pickle' if kind == 'pickle' else 'JSON'} dump refused: {refused}") from None
    rank = rank_from_name(Path(shown).name)
    if rank is None:
        raise DumpError(shown, "cannot tell which rank wrote this dump: torch names a dump by its prefix and "
                               "the rank at the end (TORCH_FR_DUMP_TEMP_FILE + rank, e.g. rank_3 or rank_3.json)")
    return _to_dump(raw, shown, rank, kind)


_STATUS_KEYS = ("last_enqueued_collective", "last_started_collective", "last_completed_collective")


def _to_dump(raw: Any, shown: str, rank: int, kind: str) -> Dump:
    def bad(message: str) -> DumpError:
        return DumpError(shown, f"not a Flight Recorder dump this reader knows: {message}")

    if not isinstance(raw, dict):
        raise bad(f"the top level is a {type(raw).__name__}, not a dictionary")
    for key in ("version", "entries"):
        if key not in raw:
            raise bad(f"no '{key}'")
    version = raw["version"]
    if not isinstance(version, str) or not re.fullmatch(r"\d+\.\d+", version):
        raise bad(f"version {str(version)[:20]!r} is not MAJOR.MINOR")
    if not isinstance(raw["entries"], list):
        raise bad("'entries' is not a list")
    entries = [_entry(item, i, bad) for i, item in enumerate(raw["entries"])]
    config: dict[str, tuple[str, tuple[int, ...] | None]] = {}
    pg_config = raw.get("pg_config") or {}
    if not isinstance(pg_config, dict):
        raise bad("'pg_config' is not a dictionary")
    for name, value in pg_config.items():
        if not isinstance(value, dict):
            raise bad(f"pg_config[{str(name)[:40]!r}] is not a dictionary")
        ranks = _ranks(value.get("ranks"))
        if str(name) == "":
            continue            # gloo writes one empty record: it keeps no group configuration
        config[str(name)] = (str(value.get("desc", "")), ranks)
    status: dict[str, dict[str, int]] = {}
    pg_status = raw.get("pg_status") or {}
    if not isinstance(pg_status, dict):
        raise bad("'pg_status' is not a dictionary")
    for pg_id, value in pg_status.items():
        if isinstance(value, dict):
            status[str(pg_id)] = {key: _as_int(value.get(key), -1) for key in _STATUS_KEYS}
    entries.sort(key=lambda e: e.record_id)
    return Dump(shown, rank, kind, version, entries, config, status, str(raw.get("comm_lib_version") or ""))


def _ranks(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list):
        items = value
    elif isinstance(value, str) and re.fullmatch(r"\[\s*(\d+\s*(,\s*\d+\s*)*)?\]", value.strip()):
        items = [int(x) for x in re.findall(r"\d+", value)]
    else:
        return None
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in items):
        return None
    return tuple(items) or None


def _as_int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,30}", value.strip()):
        return int(value)
    return default


_P2P_NAME = re.compile(r"(send|recv) (\d+)(->|<-)(\d+)\Z")


def _entry(item: Any, index: int, bad) -> Entry:
    if not isinstance(item, dict):
        raise bad(f"entry {index} is a {type(item).__name__}, not a dictionary")
    for key in ("collective_seq_id", "profiling_name", "process_group", "record_id"):
        if key not in item:
            raise bad(f"entry {index} has no '{key}'")
    group = item["process_group"]
    if not isinstance(group, (list, tuple)) or len(group) != 2:
        raise bad(f"entry {index}: process_group is not a (name, description) pair")
    name = str(item["profiling_name"])
    backend, _, op = name.partition(":")
    if not op:
        backend, op = "", name
    op, _, peer = op.partition(" ")
    frames = []
    for frame in item.get("frames") or []:
        if isinstance(frame, dict):
            frames.append(Frame(str(frame.get("name", "")), str(frame.get("filename", "")), _as_int(frame.get("line"))))

    def sizes(key: str) -> list:
        value = item.get(key)
        return value if isinstance(value, list) else []

    return Entry(
        record_id=_as_int(item["record_id"]), pg_id=_as_int(item.get("pg_id"), -1),
        pg_name=str(group[0]), pg_desc=str(group[1]),
        collective_seq_id=_as_int(item["collective_seq_id"]), p2p_seq_id=_as_int(item.get("p2p_seq_id")),
        op_id=_as_int(item.get("op_id")), profiling_name=name, backend=backend, op=op, peer=peer,
        is_p2p=bool(item.get("is_p2p")) or op in ("send", "recv"),
        input_sizes=sizes("input_sizes"), output_sizes=sizes("output_sizes"),
        input_dtypes=[str(x) for x in sizes("input_dtypes")], output_dtypes=[str(x) for x in sizes("output_dtypes")],
        state=str(item.get("state") or ""), time_created_ns=_as_int(item.get("time_created_ns")),
        started_ns=_as_int(item.get("time_discovered_started_ns")),
        completed_ns=_as_int(item.get("time_discovered_completed_ns")),
        timeout_ms=_as_int(item.get("timeout_ms")), frames=tuple(frames))
