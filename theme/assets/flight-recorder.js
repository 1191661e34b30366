// PyTorch Flight Recorder dumps in the browser: the JavaScript twin of
// rootcause/matching/flight_recorder.py (reading a dump, JSON or pickle, safely) and
// rootcause/matching/flight_verdict.py (the verdict). Same rules, same sentences, same report:
// tests/site/test_flight_recorder_browser.py holds the two to identical verdicts on every real
// fixture in Chromium.
//
// A pickle is never executed: the opcodes are interpreted here, only those that build plain data
// (dict, list, tuple, str, bytes, int, float, bool, None, the memo) are accepted, and every global,
// call or object build is refused before anything else is read. Sizes, nesting, memo expansion and
// number lengths are bounded as in Python.
(function (root) {
  "use strict";

  var MAX_DUMP_BYTES = 256 * 1024 * 1024, MAX_DEPTH = 24, MAX_VALUES_PER_BYTE = 4, MIN_VALUES = 200000;
  var MAX_NUMBER_CHARS = 64;

  function DumpError(name, message) { this.name = name; this.message = message; this.text = name + ": " + message; }
  function Refused(message) { this.message = message; }

  var SAFE = {
    0x28: "MARK", 0x2e: "STOP", 0x30: "POP", 0x31: "POP_MARK", 0x32: "DUP",
    0x46: "FLOAT", 0x49: "INT", 0x4a: "BININT", 0x4b: "BININT1", 0x4d: "BININT2", 0x4c: "LONG",
    0x8a: "LONG1", 0x8b: "LONG4", 0x4e: "NONE", 0x88: "NEWTRUE", 0x89: "NEWFALSE",
    0x58: "BINUNICODE", 0x8c: "SHORT_BINUNICODE", 0x8d: "BINUNICODE8", 0x56: "UNICODE",
    0x42: "BINBYTES", 0x43: "SHORT_BINBYTES", 0x8e: "BINBYTES8", 0x54: "BINSTRING",
    0x55: "SHORT_BINSTRING", 0x47: "BINFLOAT",
    0x5d: "EMPTY_LIST", 0x61: "APPEND", 0x65: "APPENDS", 0x6c: "LIST",
    0x29: "EMPTY_TUPLE", 0x74: "TUPLE", 0x85: "TUPLE1", 0x86: "TUPLE2", 0x87: "TUPLE3",
    0x7d: "EMPTY_DICT", 0x64: "DICT", 0x73: "SETITEM", 0x75: "SETITEMS",
    0x70: "PUT", 0x71: "BINPUT", 0x72: "LONG_BINPUT", 0x67: "GET", 0x68: "BINGET", 0x6a: "LONG_BINGET",
    0x94: "MEMOIZE", 0x80: "PROTO", 0x95: "FRAME"
  };
  var REFUSED = {
    0x63: "GLOBAL", 0x93: "STACK_GLOBAL", 0x52: "REDUCE", 0x62: "BUILD", 0x69: "INST",
    0x6f: "OBJ", 0x81: "NEWOBJ", 0x92: "NEWOBJ_EX", 0x82: "EXT1", 0x83: "EXT2",
    0x84: "EXT4", 0x50: "PERSID", 0x51: "BINPERSID", 0x8f: "EMPTY_SET", 0x90: "ADDITEMS",
    0x91: "FROZENSET", 0x96: "BYTEARRAY8", 0x97: "NEXT_BUFFER", 0x98: "READONLY_BUFFER",
    0x53: "STRING"
  };

  // Python's values: a dict is a Map (its keys keep their type), a tuple is an array marked as one
  function Tuple(items) { items.isTuple = true; return items; }

  var utf8 = new TextDecoder("utf-8", { fatal: true });
  var latin1 = new TextDecoder("latin1");

  function loadPickle(data, maxDepth) {
    maxDepth = maxDepth || MAX_DEPTH;
    var stack = [], marks = [], memo = new Map(), pos = 0, end = data.length;
    var view = new DataView(data.buffer, data.byteOffset, data.byteLength);

    function take(n) {
      if (n < 0 || pos + n > end) {
        throw new Refused("cut short: " + n + " bytes wanted at offset " + pos + ", the file ends at " + end);
      }
      var chunk = data.subarray(pos, pos + n);
      pos += n;
      return chunk;
    }
    function line() {
      var stop = -1;
      for (var i = pos; i < Math.min(end, pos + MAX_NUMBER_CHARS + 2); i++) if (data[i] === 0x0a) { stop = i; break; }
      if (stop < 0) {
        throw new Refused("a text argument at offset " + pos + " is unterminated or longer than " + MAX_NUMBER_CHARS +
                          " characters");
      }
      var chunk = latin1.decode(data.subarray(pos, stop));
      pos = stop + 1;
      return chunk;
    }
    function popMark() {
      if (!marks.length) throw new Refused("no MARK before offset " + (pos - 1));
      var start = marks.pop();
      return stack.splice(start, stack.length - start);
    }
    function pop() {
      if (stack.length <= (marks.length ? marks[marks.length - 1] : 0)) throw new Refused("stack empty at offset " + (pos - 1));
      return stack.pop();
    }
    function kindOf(v) {
      if (v instanceof Map) return "dict";
      if (Array.isArray(v)) return v.isTuple ? "tuple" : "list";
      return typeof v;
    }
    function topContainer(kind) {
      var top = stack[stack.length - 1];
      if (!stack.length || kindOf(top) !== kind) throw new Refused(kind + " expected under the items at offset " + (pos - 1));
      return top;
    }
    function isScalar(v) { return v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean" || v instanceof Uint8Array; }
    function keyOf(v) {
      if (isScalar(v)) return v;
      if (Array.isArray(v) && v.isTuple && v.every(isScalar)) return v;
      throw new Refused("a dictionary key that is a " + kindOf(v) + " at offset " + (pos - 1));
    }
    function push(v) {
      if (marks.length > maxDepth) throw new Refused("nested deeper than " + maxDepth + " at offset " + (pos - 1));
      stack.push(v);
    }
    function intOf(text) {
      if (!/^\s*[-+]?\d+\s*$/.test(text)) throw new Refused("not a number at offset " + pos + ": " + text.slice(0, 20));
      return Number(text);
    }
    function signed(bytes) {   // little-endian two's complement, as Python's int.from_bytes(signed=True)
      var value = 0n;
      for (var i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]);
      if (bytes.length && bytes[bytes.length - 1] & 0x80) value -= 1n << BigInt(8 * bytes.length);
      return Number(value);
    }
    function u32() { var b = take(4); return new DataView(b.buffer, b.byteOffset, 4).getUint32(0, true); }
    function u64() {
      var b = take(8), d = new DataView(b.buffer, b.byteOffset, 8);
      return d.getUint32(0, true) + d.getUint32(4, true) * 4294967296;
    }

    for (;;) {
      if (pos >= end) throw new Refused("cut short: the file ends at offset " + end + " before the pickle's STOP");
      var code = data[pos++], name = SAFE[code];
      if (!name) {
        if (REFUSED[code]) {
          throw new Refused("opcode " + REFUSED[code] + " at offset " + (pos - 1) + ": it imports or calls Python code, " +
                            "which a Flight Recorder dump never does; refused, nothing was run");
        }
        throw new Refused("unknown opcode byte 0x" + ("0" + code.toString(16)).slice(-2) + " at offset " + (pos - 1));
      }
      var size, items, value, key, i;
      switch (name) {
        case "PROTO":
          if (take(1)[0] > 5) throw new Refused("pickle protocol " + data[pos - 1] + " is not known");
          break;
        case "FRAME": take(8); break;
        case "STOP":
          if (stack.length !== 1 || marks.length) {
            throw new Refused("STOP at offset " + (pos - 1) + " leaves " + stack.length + " values on the stack");
          }
          return stack[0];
        case "MARK":
          if (marks.length >= maxDepth) throw new Refused("nested deeper than " + maxDepth + " at offset " + (pos - 1));
          marks.push(stack.length);
          break;
        case "POP": pop(); break;
        case "POP_MARK": popMark(); break;
        case "DUP": value = pop(); stack.push(value); push(value); break;
        case "NONE": push(null); break;
        case "NEWTRUE": push(true); break;
        case "NEWFALSE": push(false); break;
        case "BININT": push(new DataView(take(4).slice().buffer).getInt32(0, true)); break;
        case "BININT1": push(take(1)[0]); break;
        case "BININT2": push(new DataView(take(2).slice().buffer).getUint16(0, true)); break;
        case "LONG1": case "LONG4":
          size = name === "LONG1" ? take(1)[0] : new DataView(take(4).slice().buffer).getInt32(0, true);
          if (size > MAX_NUMBER_CHARS || size < 0) throw new Refused("a number of " + size + " bytes at offset " + pos);
          push(signed(take(size)));
          break;
        case "INT": case "LONG":
          value = line().replace(/L$/, "");
          if (name === "INT" && (value === "00" || value === "01")) push(value === "01");
          else push(intOf(value));
          break;
        case "FLOAT":
          value = line();
          if (!/^\s*[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?|inf|nan)\s*$/i.test(value)) {
            throw new Refused("not a number at offset " + pos);
          }
          push(parseFloat(value));
          break;
        case "BINFLOAT": push(new DataView(take(8).slice().buffer).getFloat64(0, false)); break;
        case "BINUNICODE": case "SHORT_BINUNICODE": case "BINUNICODE8":
          size = name === "BINUNICODE" ? u32() : name === "SHORT_BINUNICODE" ? take(1)[0] : u64();
          value = take(size);
          try { push(utf8.decode(value)); } catch (e) { throw new Refused("text that is not UTF-8 at offset " + (pos - size)); }
          break;
        case "UNICODE":
          i = data.indexOf(0x0a, pos);
          if (i < 0) throw new Refused("cut short: unterminated text at offset " + pos);
          value = latin1.decode(take(i - pos));
          take(1);
          push(value.replace(/\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})/g, function (_, a, b) {
            return String.fromCodePoint(parseInt(a || b, 16));
          }));
          break;
        case "BINBYTES": case "SHORT_BINBYTES": case "BINBYTES8": case "BINSTRING": case "SHORT_BINSTRING":
          size = (name === "SHORT_BINBYTES" || name === "SHORT_BINSTRING") ? take(1)[0] : name === "BINBYTES8" ? u64() : u32();
          push(take(size).slice());
          break;
        case "EMPTY_LIST": push([]); break;
        case "EMPTY_TUPLE": push(Tuple([])); break;
        case "EMPTY_DICT": push(new Map()); break;
        case "APPEND": value = pop(); topContainer("list").push(value); break;
        case "APPENDS": items = popMark(); Array.prototype.push.apply(topContainer("list"), items); break;
        case "LIST": items = popMark(); push(items); break;
        case "TUPLE": items = popMark(); push(Tuple(items)); break;
        case "TUPLE1": case "TUPLE2": case "TUPLE3":
          size = Number(name.slice(-1));
          items = [];
          for (i = 0; i < size; i++) items.push(pop());
          push(Tuple(items.reverse()));
          break;
        case "DICT": case "SETITEMS":
          items = popMark();
          if (items.length % 2) throw new Refused("an odd number of items for a dictionary at offset " + (pos - 1));
          value = name === "DICT" ? new Map() : topContainer("dict");
          for (i = 0; i < items.length; i += 2) value.set(keyOf(items[i]), items[i + 1]);
          if (name === "DICT") push(value);
          break;
        case "SETITEM": value = pop(); key = pop(); topContainer("dict").set(keyOf(key), value); break;
        case "PUT": case "BINPUT": case "LONG_BINPUT": case "MEMOIZE":
          if (stack.length <= (marks.length ? marks[marks.length - 1] : 0)) throw new Refused("nothing to remember at offset " + (pos - 1));
          key = name === "MEMOIZE" ? memo.size : name === "BINPUT" ? take(1)[0] : name === "LONG_BINPUT" ? u32() : intOf(line());
          memo.set(key, stack[stack.length - 1]);
          break;
        case "GET": case "BINGET": case "LONG_BINGET":
          key = name === "BINGET" ? take(1)[0] : name === "LONG_BINGET" ? u32() : intOf(line());
          if (!memo.has(key)) throw new Refused("memo " + key + " read before it was written, at offset " + (pos - 1));
          push(memo.get(key));
          break;
      }
    }
  }

  function checkShape(value, maxValues, maxDepth) {
    maxDepth = maxDepth || MAX_DEPTH;
    var count = 0, onPath = new Set(), todo = [[value, 0, false]];
    while (todo.length) {
      var item = todo.pop(), v = item[0], depth = item[1];
      if (item[2]) { onPath.delete(v); continue; }
      count++;
      if (count > maxValues) {
        throw new Refused("the data expands to more than " + maxValues.toLocaleString("en-US") + " values (a memo names " +
                          "the same containers again and again)");
      }
      var container = Array.isArray(v) || v instanceof Map || (v !== null && typeof v === "object" && !(v instanceof Uint8Array));
      if (container) {
        if (onPath.has(v)) throw new Refused("a container holds itself");
        if (depth >= maxDepth) throw new Refused("nested deeper than " + maxDepth);
        onPath.add(v);
        todo.push([v, depth, true]);
        var children = v instanceof Map ? Array.from(v.keys()).concat(Array.from(v.values()))
          : Array.isArray(v) ? v : Object.keys(v).concat(Object.keys(v).map(function (k) { return v[k]; }));
        for (var i = 0; i < children.length; i++) todo.push([children[i], depth + 1, false]);
      }
    }
  }

  // -- dumps ------------------------------------------------------------------------------------
  var JSON_START = /^\s*\{\s*"(comm_lib_version|entries|nccl_comm_state|pg_config|pg_status|version)"\s*:/;
  var RANK = /(\d+)(?:\.(?:json|pkl|pickle))?$/;

  function looksLikeDump(head) {
    if (head[0] === 0x80 && head.length > 1 && head[1] >= 2 && head[1] <= 5) return "pickle";
    if (JSON_START.test(latin1.decode(head.subarray(0, 4096)))) return "json";
    return null;
  }

  function isDict(v) { return v instanceof Map || (v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array)); }
  function get(d, k) { return d instanceof Map ? d.get(k) : (Object.prototype.hasOwnProperty.call(d, k) ? d[k] : undefined); }
  function has(d, k) { return d instanceof Map ? d.has(k) : Object.prototype.hasOwnProperty.call(d, k); }
  function items(d) { return d instanceof Map ? Array.from(d.entries()) : Object.keys(d).map(function (k) { return [k, d[k]]; }); }
  function pyType(v) {
    if (v === null || v === undefined) return "NoneType";
    if (v instanceof Map) return "dict";
    if (Array.isArray(v)) return v.isTuple ? "tuple" : "list";
    if (typeof v === "string") return "str";
    if (typeof v === "boolean") return "bool";
    if (typeof v === "number") return Number.isInteger(v) ? "int" : "float";
    if (v instanceof Uint8Array) return "bytes";
    return "dict";
  }
  function str(v) {
    if (v === null || v === undefined) return "None";
    if (typeof v === "boolean") return v ? "True" : "False";
    return String(v);
  }
  function asInt(v, dflt) {
    if (dflt === undefined) dflt = 0;
    if (typeof v === "boolean") return v ? 1 : 0;
    if (typeof v === "number" && Number.isInteger(v)) return v;
    if (typeof v === "string" && /^\s*-?\d{1,30}\s*$/.test(v)) return Number(v);
    return dflt;
  }
  function truthy(v) {
    if (v === null || v === undefined || v === false || v === 0 || v === "") return false;
    if (Array.isArray(v)) return v.length > 0;
    if (v instanceof Map) return v.size > 0;
    return true;
  }

  function rankFromName(name) { var m = RANK.exec(name); return m ? Number(m[1]) : null; }
  function baseName(shown) { var parts = shown.split("/"); return parts[parts.length - 1]; }

  function parseDump(data, shown) {
    var kind = looksLikeDump(data.subarray(0, 4096)), raw;
    if (kind === null) throw new DumpError(shown, "not a Flight Recorder dump (neither a pickle nor a JSON object with a dump's keys)");
    if (data.length > MAX_DUMP_BYTES) {
      throw new DumpError(shown, data.length.toLocaleString("en-US") + " bytes; the limit for a dump is " +
                          MAX_DUMP_BYTES.toLocaleString("en-US"));
    }
    try {
      if (kind === "pickle") raw = loadPickle(data);
      else {
        var text;
        try { text = utf8.decode(data); } catch (e) { throw new Refused("not valid JSON: not UTF-8"); }
        if (maxJsonDepth(text) > 10000) throw new Refused("nested deeper than " + MAX_DEPTH);
        try { raw = JSON.parse(text); } catch (e) {
          var cut = /\}\s*$/.test(text) ? "" : " (cut short?)";
          throw new Refused("not valid JSON" + cut + ": " + e.message);
        }
      }
      checkShape(raw, Math.max(MIN_VALUES, MAX_VALUES_PER_BYTE * data.length));
    } catch (e) {
      if (!(e instanceof Refused)) throw e;
      throw new DumpError(shown, (kind === "pickle" ? "pickle" : "JSON") + " dump refused: " + e.message);
    }
    var rank = rankFromName(baseName(shown));
    if (rank === null) {
      throw new DumpError(shown, "cannot tell which rank wrote this dump: torch names a dump by its prefix and " +
                          "the rank at the end (TORCH_FR_DUMP_TEMP_FILE + rank, e.g. rank_3 or rank_3.json)");
    }
    return toDump(raw, shown, rank, kind);
  }

  function maxJsonDepth(text) {   // JSON.parse has no depth limit of its own
    var depth = 0, most = 0, inString = false;
    for (var i = 0; i < text.length; i++) {
      var c = text.charCodeAt(i);
      if (inString) { if (c === 92) i++; else if (c === 34) inString = false; continue; }
      if (c === 34) inString = true;
      else if (c === 91 || c === 123) { if (++depth > most) most = depth; }
      else if (c === 93 || c === 125) depth--;
    }
    return most;
  }

  var STATUS_KEYS = ["last_enqueued_collective", "last_started_collective", "last_completed_collective"];
  var P2P_OPS = { send: true, recv: true };

  function toDump(raw, shown, rank, kind) {
    function bad(message) { return new DumpError(shown, "not a Flight Recorder dump this reader knows: " + message); }
    if (!isDict(raw)) throw bad("the top level is a " + pyType(raw) + ", not a dictionary");
    ["version", "entries"].forEach(function (key) { if (!has(raw, key)) throw bad("no '" + key + "'"); });
    var version = get(raw, "version");
    if (typeof version !== "string" || !/^\d+\.\d+$/.test(version)) throw bad("version '" + str(version).slice(0, 20) + "' is not MAJOR.MINOR");
    var rawEntries = get(raw, "entries");
    if (!Array.isArray(rawEntries)) throw bad("'entries' is not a list");
    var entries = rawEntries.map(function (item, i) { return toEntry(item, i, bad); });
    var config = {}, pgConfig = get(raw, "pg_config") || new Map();
    if (!truthy(pgConfig)) pgConfig = new Map();
    if (!isDict(pgConfig)) throw bad("'pg_config' is not a dictionary");
    items(pgConfig).forEach(function (kv) {
      if (!isDict(kv[1])) throw bad("pg_config['" + str(kv[0]).slice(0, 40) + "'] is not a dictionary");
      if (str(kv[0]) === "") return;     // gloo writes one empty record: it keeps no group configuration
      config[str(kv[0])] = [has(kv[1], "desc") ? str(get(kv[1], "desc")) : "", ranksOf(get(kv[1], "ranks"))];
    });
    var status = {}, pgStatus = get(raw, "pg_status") || new Map();
    if (!truthy(pgStatus)) pgStatus = new Map();
    if (!isDict(pgStatus)) throw bad("'pg_status' is not a dictionary");
    items(pgStatus).forEach(function (kv) {
      if (!isDict(kv[1])) return;
      var row = {};
      STATUS_KEYS.forEach(function (k) { row[k] = asInt(get(kv[1], k), -1); });
      status[str(kv[0])] = row;
    });
    entries.sort(function (a, b) { return a.record_id - b.record_id; });
    return { path: shown, rank: rank, format: kind, version: version, entries: entries, pg_config: config,
             pg_status: status, comm_lib_version: str(get(raw, "comm_lib_version") || "") };
  }

  function ranksOf(v) {
    var list;
    if (Array.isArray(v)) list = v;
    else if (typeof v === "string" && /^\[\s*(\d+\s*(,\s*\d+\s*)*)?\]$/.test(v.trim())) list = (v.match(/\d+/g) || []).map(Number);
    else return null;
    if (!list.every(function (x) { return typeof x === "number" && Number.isInteger(x); })) return null;
    return list.length ? list : null;
  }

  function toEntry(item, index, bad) {
    if (!isDict(item)) throw bad("entry " + index + " is a " + pyType(item) + ", not a dictionary");
    ["collective_seq_id", "profiling_name", "process_group", "record_id"].forEach(function (key) {
      if (!has(item, key)) throw bad("entry " + index + " has no '" + key + "'");
    });
    var group = get(item, "process_group");
    if (!Array.isArray(group) || group.length !== 2) throw bad("entry " + index + ": process_group is not a (name, description) pair");
    var name = str(get(item, "profiling_name")), colon = name.indexOf(":");
    var backend = colon < 0 ? name : name.slice(0, colon), op = colon < 0 ? "" : name.slice(colon + 1);
    if (!op) { backend = ""; op = name; }
    var space = op.indexOf(" "), peer = "";
    if (space >= 0) { peer = op.slice(space + 1); op = op.slice(0, space); }
    var frames = [];
    (truthy(get(item, "frames")) ? get(item, "frames") : []).forEach(function (f) {
      if (isDict(f)) {
        frames.push({ name: str(has(f, "name") ? get(f, "name") : ""), filename: str(has(f, "filename") ? get(f, "filename") : ""),
                      line: asInt(get(f, "line")) });
      }
    });
    function sizes(key) { var v = get(item, key); return Array.isArray(v) ? v : []; }
    var isP2p = truthy(get(item, "is_p2p")) || P2P_OPS[op] === true;
    var e = {
      record_id: asInt(get(item, "record_id")), pg_id: asInt(get(item, "pg_id"), -1),
      pg_name: str(group[0]), pg_desc: str(group[1]),
      collective_seq_id: asInt(get(item, "collective_seq_id")), p2p_seq_id: asInt(get(item, "p2p_seq_id")),
      op_id: asInt(get(item, "op_id")), profiling_name: name, backend: backend, op: op, peer: peer, is_p2p: isP2p,
      input_sizes: sizes("input_sizes"), output_sizes: sizes("output_sizes"),
      input_dtypes: sizes("input_dtypes").map(str), output_dtypes: sizes("output_dtypes").map(str),
      state: str(get(item, "state") || ""), frames: frames
    };
    e.seq = e.is_p2p ? e.p2p_seq_id : e.collective_seq_id;
    return e;
  }

  // -- the verdict (flight_verdict.py) -------------------------------------------------------------
  var ENTRIES_BY_KIND = {
    mismatch: ["distributed-mismatched-collectives", "gloo-collective-size-mismatch"],
    missing: ["distributed-hang-mid-training", "nccl-watchdog-collective-timeout"],
    lagging: ["distributed-hang-mid-training", "nccl-watchdog-collective-timeout"],
    no_dump: ["torchrun-worker-killed-sigkill", "gloo-connection-closed-by-peer"],
    p2p_unmatched: ["distributed-hang-mid-training", "distributed-mismatched-collectives"]
  };
  var KIND_ORDER = { mismatch: 0, p2p_unmatched: 1, missing: 2, no_dump: 3, lagging: 4 };
  var SIZES_DIFFER = ["all_to_all", "alltoall", "alltoall_base", "all_to_allv", "gather", "scatter", "reduce_scatter_v",
                      "allgather_v", "all_gather_v", "coalesced"];
  var INTERNAL = ["/torch/distributed/", "/torch/nn/parallel/", "<frozen "];

  function numSort(a) { return a.slice().sort(function (x, y) { return x - y; }); }
  function cmp(a, b) {   // Python's ordering of ints, strings, booleans and lists of them
    if (Array.isArray(a)) {
      for (var i = 0; i < Math.min(a.length, b.length); i++) { var c = cmp(a[i], b[i]); if (c) return c; }
      return a.length - b.length;
    }
    if (typeof a === "boolean") { a = a ? 1 : 0; b = b ? 1 : 0; }
    return a < b ? -1 : a > b ? 1 : 0;
  }
  function pyRepr(v) {
    if (Array.isArray(v)) return "[" + v.map(pyRepr).join(", ") + "]";
    if (typeof v === "string") return "'" + v + "'";
    return str(v);
  }

  function Group(name, desc) { this.name = name; this.desc = desc; this.members = new Set(); this.calls = new Map(); this.p2p = new Map(); this.noDump = new Set(); }
  Group.prototype.label = function () {
    var shown = this.desc && this.desc !== "undefined" ? this.desc : "group " + this.name;
    return shown + " (pg " + this.name + ")";
  };
  Group.prototype.last = function (rank) {
    var calls = this.calls.get(rank);
    if (!calls || !calls.size) return 0;
    return Math.max.apply(null, Array.from(calls.keys()));
  };
  Group.prototype.dumped = function () {
    var self = this;
    return numSort(Array.from(this.members).filter(function (r) { return !self.noDump.has(r); }));
  };
  Group.prototype.callRanks = function () { return numSort(Array.from(this.calls.keys())); };

  function joinRanks(ranks) {
    var words = numSort(ranks).map(String);
    if (words.length === 1) return "rank " + words[0];
    return "ranks " + words.slice(0, -1).join(", ") + " and " + words[words.length - 1];
  }
  function cap(text) { return text.slice(0, 1).toUpperCase() + text.slice(1); }
  function numberOf(name) { return /^\d+$/.test(name) ? Number(name) : Math.pow(2, 62); }

  function checkConsistent(dumps) {
    var seen = new Map();
    dumps.forEach(function (d) {
      if (seen.has(d.rank)) {
        throw new DumpError(d.path, "a second dump for rank " + d.rank + " (the first is " + seen.get(d.rank).path +
                            "); give one folder or one format per job");
      }
      seen.set(d.rank, d);
    });
    var first = dumps[0], other = dumps.find(function (d) { return d.version !== first.version; });
    if (other) {
      throw new DumpError(other.path, "dump format version " + other.version + ", but " + first.path + " has " +
                          first.version + ": dumps of different PyTorch builds, probably not one job");
    }
  }

  function buildGroups(dumps) {
    var groups = new Map(), byName = {};
    dumps.forEach(function (d) {
      Object.keys(d.pg_config).forEach(function (k) { if (d.pg_config[k][1]) byName[k] = d.pg_config[k]; });
    });
    dumps.forEach(function (d) {
      d.entries.forEach(function (e) {
        var key = JSON.stringify([e.pg_name, e.pg_desc]);
        if (!groups.has(key)) groups.set(key, new Group(e.pg_name, e.pg_desc));
        var g = groups.get(key);
        g.members.add(d.rank);
        if (e.is_p2p) {
          if (!g.p2p.has(d.rank)) g.p2p.set(d.rank, []);
          g.p2p.get(d.rank).push(e);
        } else {
          if (!g.calls.has(d.rank)) g.calls.set(d.rank, new Map());
          g.calls.get(d.rank).set(e.collective_seq_id, e);
        }
      });
    });
    var ranks = new Set(dumps.map(function (d) { return d.rank; })), all = new Set(ranks);
    Object.keys(byName).forEach(function (k) { (byName[k][1] || []).forEach(function (r) { all.add(r); }); });
    var world = ranks.size ? Math.max.apply(null, Array.from(all)) + 1 : 0;
    groups.forEach(function (g) {
      var descRanks = byName[g.name] ? byName[g.name][1] : null;
      if (descRanks) descRanks.forEach(function (r) { g.members.add(r); });
      else if (g.desc === "default_pg" || g.name === "0") for (var r = 0; r < world; r++) g.members.add(r);
      g.members.forEach(function (r) { if (!ranks.has(r)) g.noDump.add(r); });
    });
    return { groups: groups, world: world };
  }

  function signature(e) {
    var sizes = SIZES_DIFFER.indexOf(e.op) >= 0 ? [] : [pyRepr(e.input_sizes), pyRepr(e.output_sizes)];
    var dtypes = Array.from(new Set(e.input_dtypes.concat(e.output_dtypes))).sort(cmp);
    return { key: JSON.stringify([e.op, sizes, dtypes]), op: e.op, sizes: JSON.stringify(sizes) };
  }
  function call(e) {
    return { op: e.op, seq: e.seq, input_sizes: e.input_sizes, output_sizes: e.output_sizes,
             input_dtypes: e.input_dtypes, output_dtypes: e.output_dtypes, state: e.state };
  }

  function mismatchOf(g) {
    var ranks = g.callRanks();
    if (ranks.length < 2) return null;
    var start = Math.max.apply(null, ranks.map(function (r) { return Math.min.apply(null, Array.from(g.calls.get(r).keys())); }));
    var top = Math.max.apply(null, ranks.map(function (r) { return g.last(r); }));
    for (var seq = start; seq <= top; seq++) {
      var present = new Map();
      ranks.forEach(function (r) { if (g.calls.get(r).has(seq)) present.set(r, g.calls.get(r).get(seq)); });
      if (present.size < 2) continue;
      var sides = new Map();
      present.forEach(function (e, r) {
        var k = signature(e).key;
        if (!sides.has(k)) sides.set(k, []);
        sides.get(k).push(r);
      });
      if (sides.size < 2) continue;
      var ordered = Array.from(sides.values()).sort(function (a, b) { return (b.length - a.length) || cmp(a, b); });
      var majority = ordered[0], culprits = [];
      ordered.slice(1).forEach(function (rs) { culprits = culprits.concat(rs); });
      culprits = numSort(culprits);
      var other = present.get(culprits[0]), base = present.get(majority[0]), detail;
      if (other.op !== base.op) detail = "op";
      else if (signature(other).sizes !== signature(base).sizes) detail = "size";
      else detail = "dtype";
      return { seq: seq, detail: detail, majority: numSort(majority), culprits: culprits,
               calls: ordered.map(function (rs) { var c = call(present.get(rs[0])); return Object.assign({ ranks: numSort(rs) }, c); }),
               tie: ordered[1].length === majority.length, present: present };
    }
    return null;
  }

  function p2pUnmatched(g) {
    if (!g.p2p.size) return null;
    var local = numSort(Array.from(g.members)), posted = new Map();
    function parse(e) {
      var parts = e.peer ? e.peer.replace("<-", "->").split("->") : [];
      if (parts.length !== 2 || !parts.every(function (p) { return /^\d+$/.test(p); })) return null;
      var a = Number(parts[0]), b = Number(parts[1]);
      var src = e.op === "send" ? a : b, dst = e.op === "send" ? b : a;
      if (Math.max(src, dst) < local.length) { src = local[src]; dst = local[dst]; }
      return [src, dst];
    }
    function count(k) { return posted.get(k) || 0; }
    g.p2p.forEach(function (entries) {
      entries.forEach(function (e) {
        var sd = parse(e);
        if (sd) posted.set(JSON.stringify([e.op, sd[0], sd[1]]), count(JSON.stringify([e.op, sd[0], sd[1]])) + 1);
      });
    });
    var ranks = numSort(Array.from(g.p2p.keys()));
    for (var i = 0; i < ranks.length; i++) {
      var entries = g.p2p.get(ranks[i]);
      for (var j = 0; j < entries.length; j++) {
        var e = entries[j];
        if (e.state === "completed") continue;
        var sd = parse(e);
        if (!sd) continue;
        var partnerOp = e.op === "send" ? "recv" : "send", partner = e.op === "send" ? sd[1] : sd[0];
        var mine = count(JSON.stringify([e.op, sd[0], sd[1]])), theirs = count(JSON.stringify([partnerOp, sd[0], sd[1]]));
        if (theirs < mine) return { rank: ranks[i], partner: partner, entry: e, partner_op: partnerOp };
      }
    }
    return null;
  }

  function framesOf(e) {
    if (!e) return [];
    var own = e.frames.filter(function (f) { return !INTERNAL.some(function (m) { return f.filename.indexOf(m) >= 0; }); });
    return (own.length ? own : e.frames).map(function (f) { return { name: f.name, filename: f.filename, line: f.line }; });
  }

  function verdict(dumps) {
    checkConsistent(dumps);
    dumps = dumps.slice().sort(function (a, b) { return a.rank - b.rank; });
    var built = buildGroups(dumps), groups = built.groups, world = built.world, byRank = new Map();
    dumps.forEach(function (d) { byRank.set(d.rank, d); });
    var backends = new Set(), statesKnown = false;
    dumps.forEach(function (d) { d.entries.forEach(function (e) { if (e.backend) backends.add(e.backend); if (e.state === "completed") statesKnown = true; }); });
    var divergences = [], tables = [];
    var keys = Array.from(groups.keys()).sort(function (a, b) {
      var ga = groups.get(a), gb = groups.get(b);
      return (gb.members.size - ga.members.size) || (numberOf(ga.name) - numberOf(gb.name)) ||
        cmp([ga.name, ga.desc], [gb.name, gb.desc]);
    });
    keys.forEach(function (key) {
      var g = groups.get(key), dumped = g.dumped();
      var top = dumped.length ? Math.max.apply(null, dumped.map(function (r) { return g.last(r); })) : 0;
      var topEntry = null;
      dumped.forEach(function (r) { if (!topEntry && g.calls.has(r) && g.calls.get(r).has(top)) topEntry = g.calls.get(r).get(top); });
      var rows = numSort(Array.from(g.members)).map(function (r) {
        var last = g.noDump.has(r) ? null : g.last(r), e = last ? g.calls.get(r).get(last) : null;
        return { rank: r, last_seq: last, op: e ? e.op : null, state: e ? e.state : null, dump: !g.noDump.has(r) };
      });
      tables.push({ group: g.label(), name: g.name, desc: g.desc, members: numSort(Array.from(g.members)), top_seq: top,
                    top_op: topEntry ? topEntry.op : null, ranks: rows });
      var mismatch = mismatchOf(g);
      if (mismatch) {
        var culpritEntry = mismatch.present.get(mismatch.culprits[0]);
        divergences.push({ kind: "mismatch", group: g.label(), pg: g.name, desc: g.desc, op: culpritEntry.op,
                           seq: mismatch.seq, detail: mismatch.detail, culprits: mismatch.culprits,
                           waiting: mismatch.majority, tie: mismatch.tie, calls: mismatch.calls,
                           stack_rank: mismatch.culprits[0], stack: framesOf(culpritEntry) });
      }
      var p2p = p2pUnmatched(g);
      if (p2p) {
        divergences.push({ kind: "p2p_unmatched", group: g.label(), pg: g.name, desc: g.desc, op: p2p.entry.op,
                           seq: p2p.entry.p2p_seq_id, culprits: [p2p.partner], waiting: [p2p.rank],
                           partner_op: p2p.partner_op, stack_rank: p2p.rank, stack: framesOf(p2p.entry) });
      }
      var behind = new Map(), atTop = [];
      dumped.forEach(function (r) { var l = g.last(r); if (l < top) behind.set(r, top - l); else atTop.push(r); });
      var behindRanks = numSort(Array.from(behind.keys()));
      var explainedByMismatch = mismatch && mismatch.seq <= top && behindRanks.every(function (r) { return mismatch.culprits.indexOf(r) >= 0; });
      if (behind.size && !explainedByMismatch) {
        var gaps = Array.from(behind.values()), kind = Math.min.apply(null, gaps) === 1 ? "missing" : "lagging";
        var culprit = behindRanks.slice().sort(function (a, b) { return (behind.get(b) - behind.get(a)) || (a - b); })[0];
        var firstMissing = Math.min.apply(null, behindRanks.map(function (r) { return g.last(r); })) + 1;
        var waitingIn = null;
        atTop.forEach(function (r) { if (!waitingIn && g.calls.has(r) && g.calls.get(r).has(firstMissing)) waitingIn = g.calls.get(r).get(firstMissing); });
        waitingIn = waitingIn || topEntry;
        var behindJson = {};
        behindRanks.forEach(function (r) { behindJson[String(r)] = behind.get(r); });
        var stackEntry = g.calls.has(culprit) && g.calls.get(culprit).size ? g.calls.get(culprit).get(g.last(culprit)) : null;
        divergences.push({ kind: kind, group: g.label(), pg: g.name, desc: g.desc, op: waitingIn.op, seq: waitingIn.seq,
                           top_seq: top, culprits: behindRanks, behind: behindJson, waiting: atTop, stack_rank: culprit,
                           stack: framesOf(stackEntry) });
      } else if (g.noDump.size && topEntry) {
        divergences.push({ kind: "no_dump", group: g.label(), pg: g.name, desc: g.desc, op: topEntry.op, seq: top,
                           culprits: numSort(Array.from(g.noDump)), waiting: atTop, stack_rank: null, stack: [] });
      }
    });
    var blocked = new Map();
    byRank.forEach(function (d, rank) {
      if (!d.entries.length) return;
      var latest = d.entries.reduce(function (a, b) { return b.record_id > a.record_id ? b : a; });
      divergences.forEach(function (dv) {
        if (dv.pg === latest.pg_name && dv.desc === latest.pg_desc && dv.waiting.indexOf(rank) >= 0) {
          var g = groups.get(JSON.stringify([latest.pg_name, latest.pg_desc]));
          if (g.last(rank) >= dv.seq) blocked.set(rank, dv.group);
        }
      });
    });
    divergences.forEach(function (dv) {
      var elsewhere = {}, where = new Set();
      dv.culprits.forEach(function (r) {
        if (blocked.has(r) && blocked.get(r) !== dv.group) { elsewhere[String(r)] = blocked.get(r); where.add(blocked.get(r)); }
      });
      dv.root = where.size === 0;
      dv.explained_by = Array.from(where).sort(cmp);
      dv.culprits_waiting_elsewhere = elsewhere;
    });
    divergences.sort(function (a, b) {
      return cmp([!a.root, KIND_ORDER[a.kind], a.culprits.length, a.group], [!b.root, KIND_ORDER[b.kind], b.culprits.length, b.group]);
    });
    divergences.forEach(function (dv) { dv.sentence = sentence(dv); dv.entries = ENTRIES_BY_KIND[dv.kind].slice(); });
    var notes = [];
    if (backends.has("gloo")) {
      notes.push("gloo records no send or recv in the Flight Recorder and leaves every state 'scheduled': " +
                 "a rank missing from a collective may be waiting in a point-to-point operation (its log says).");
    }
    var missingDumps = [];
    for (var r = 0; r < world; r++) if (!byRank.has(r)) missingDumps.push(r);
    var files = {};
    dumps.forEach(function (d) { files[String(d.rank)] = d.path; });
    return {
      headline: divergences.length ? divergences[0].sentence : healthySentence(tables, dumps.length),
      healthy: !divergences.length, dumps: dumps.length, ranks: numSort(Array.from(byRank.keys())),
      ranks_without_dump: missingDumps, world_size: world, version: dumps.length ? dumps[0].version : "",
      backends: Array.from(backends).sort(cmp), states_recorded: statesKnown,
      formats: Array.from(new Set(dumps.map(function (d) { return d.format; }))).sort(cmp),
      divergences: divergences, groups: tables, notes: notes, files: files
    };
  }

  function healthySentence(tables, count) {
    if (!tables.length) return "The " + count + " dumps hold no collective.";
    return "No divergence in " + count + " dumps: in each of the " + tables.length + " process groups every rank reached " +
      "the same collective, with the same operation, sizes and dtypes; the dumps do not show a hang.";
  }

  function sentence(d) {
    var op = "`" + d.op + "` #" + d.seq + " of " + d.group, others = d.waiting.length;
    if (d.kind === "missing") {
      var waiting = others > 2 ? "the other " + others + " ranks wait in it"
        : joinRanks(d.waiting) + " " + (others === 1 ? "waits" : "wait") + " in it";
      return cap(joinRanks(d.culprits)) + " never entered " + op + "; " + waiting + ".";
    }
    if (d.kind === "lagging") {
      var gaps = Array.from(new Set(Object.keys(d.behind).map(function (k) { return d.behind[k]; }))).sort(function (a, b) { return a - b; });
      var gap = gaps.length === 1 ? String(gaps[0]) : gaps[0] + " to " + gaps[gaps.length - 1];
      var verb = d.culprits.length === 1 ? "is" : "are";
      var queued = d.top_seq > d.seq ? " (queued up to #" + d.top_seq + ")" : "";
      return cap(joinRanks(d.culprits)) + " " + verb + " " + gap + " collectives behind in " + d.group + ": never entered `" +
        d.op + "` #" + d.seq + ", where " + joinRanks(d.waiting) + " " + (others === 1 ? "waits" : "wait") + queued + ".";
    }
    if (d.kind === "no_dump") {
      return cap(joinRanks(d.culprits)) + " left no dump (died, or never dumped); " + joinRanks(d.waiting) + " " +
        (others !== 1 ? "wait" : "waits") + " in " + op + ".";
    }
    if (d.kind === "p2p_unmatched") {
      return cap(joinRanks(d.waiting)) + " waits in `" + d.op + "` #" + d.seq + " of " + d.group + "; " +
        joinRanks(d.culprits) + " never posted the matching `" + d.partner_op + "`.";
    }
    var mine = d.calls.find(function (c) { return c.ranks.indexOf(d.culprits[0]) >= 0; });
    var theirs = d.calls.find(function (c) { return c !== mine; });
    var who = joinRanks(mine.ranks), them = joinRanks(theirs.ranks), where = "#" + d.seq + " of " + d.group;
    if (d.detail === "op") return cap(who) + " called `" + mine.op + "` where " + them + " called `" + theirs.op + "`, at " + where + ".";
    if (d.detail === "size") {
      return cap(who) + " called `" + mine.op + "` " + where + " with sizes " + pyRepr(mine.input_sizes) + " where " + them +
        " used " + pyRepr(theirs.input_sizes) + ".";
    }
    return cap(who) + " called `" + mine.op + "` " + where + " with dtype " + mine.input_dtypes.join(", ") + " where " + them +
      " used " + theirs.input_dtypes.join(", ") + ".";
  }

  // The verdict on named byte arrays ({name, bytes}); a DumpError for the first bad one.
  function verdictOf(files) {
    return verdict(files.map(function (f) { return parseDump(f.bytes, f.name); }));
  }

  var api = { looksLikeDump: looksLikeDump, parseDump: parseDump, loadPickle: loadPickle, verdict: verdict,
              verdictOf: verdictOf, DumpError: DumpError, Refused: Refused, ENTRIES_BY_KIND: ENTRIES_BY_KIND };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.RootcauseFlightRecorder = api;
})(typeof self !== "undefined" ? self : this);
