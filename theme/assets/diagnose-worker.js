// Runs the matcher off the page's main thread, so a log of any size never freezes the page.
// A file is read in chunks (Blob.slice), gunzipped in a stream when it is gzip, decoded in a
// stream and fed to the matcher as it arrives, as the command line reads it: memory is a chunk,
// a partial line and bounded evidence, whether the log has a thousand lines or ten million.
//
// Messages in:  {type: "run", id, top, text}    a pasted log
//               {type: "run", id, top, file}    a File or Blob (plain text or .gz)
//               {type: "run", id, top, buffer}  an ArrayBuffer, read as a file
//               {type: "run", id, top, files}   several Files: Flight Recorder dumps (told from logs by
//                                                 content, as the command line does) and logs, one incident
// Messages out: {type: "progress", id, fraction, bytes, total}
//               {type: "report", id, report, ms, bytes, total, unread}
//                 unread: null, or {at, total, reason}: reading stopped at byte `at` of `total`
//                 (of the file as stored), and why; the report covers what was read before it
//               {type: "error", id, message}
"use strict";
var params = new URLSearchParams(self.location.search);
var missing = !params.get("re2js") ? "this page does not load the regular-expression engine (re2js.js): " +
  "its theme's diagnose.html predates it" : null;
if (!missing) importScripts(params.get("re2js"), params.get("matcher"));
if (!missing && params.get("fr")) importScripts(params.get("fr"));
var matcher = null;

function load() {
  if (missing) return Promise.reject(new Error(missing));
  if (!matcher) {
    matcher = fetch(params.get("signatures")).then(function (r) {
      if (!r.ok) throw new Error("could not load signatures: HTTP " + r.status);
      return r.json();
    }).then(function (data) { return new self.RootcauseMatcher.Matcher(data); });
  }
  return matcher;
}

var CHUNK = 1 << 20;   // bytes read from the file at a time
var HOLD = 16;         // bytes held back from each chunk: a gzip header or a zero run may straddle

// Reading stopped before the end of the input: where, and why (in words for the page).
function Unread(at, reason) { this.at = at; this.reason = reason; }
function said(error) { return String(error && error.message || error).replace(/\.$/, ""); }

// A newer run was asked for: this one stops reading (the page shows only the newest).
function Cancelled() {}
var latest = null;

function readChunks(blob, onBytes, onProgress, id) {
  var offset = 0;
  function next() {
    if (id !== latest) return Promise.reject(new Cancelled());
    if (offset >= blob.size) return Promise.resolve();
    var end = Math.min(offset + CHUNK, blob.size), at = offset;
    return blob.slice(at, end).arrayBuffer().then(function (buffer) {
      offset = end;
      return Promise.resolve(onBytes(new Uint8Array(buffer), at, end >= blob.size)).then(function () {
        onProgress(end);
        return next();
      });
    }, function (error) {
      throw new Unread(at, "the file could not be read from byte " + at.toLocaleString() + " on (" +
                       said(error) + ")");
    });
  }
  return next();
}

function isMember(bytes, i) { return bytes[i] === 0x1f && bytes[i + 1] === 0x8b && bytes[i + 2] === 0x08; }
function allZero(bytes) { for (var i = 0; i < bytes.length; i++) if (bytes[i]) return false; return true; }

// Where a piece must begin: every gzip header (1f 8b 08) and the zero bytes just before one,
// every run of HOLD zero bytes, and (at the end of the file) its trailing zero bytes.
function cuts(bytes, from, to, last) {
  var found = [];
  for (var i = bytes.indexOf(0x1f, from); i >= 0 && i < to; i = bytes.indexOf(0x1f, i + 1)) {
    if (!isMember(bytes, i)) continue;
    found.push(i);
    var pad = i;
    while (pad > from && bytes[pad - 1] === 0) pad--;
    if (pad < i) found.push(pad);
  }
  for (var z = bytes.indexOf(0, from); z >= 0 && z < to; ) {
    var run = z;
    while (run < bytes.length && bytes[run] === 0 && run - z < HOLD) run++;
    if (run - z >= HOLD && bytes[z - 1] !== 0) found.push(z);
    z = bytes.indexOf(0, run === z ? z + 1 : run);
  }
  if (last) {
    var end = bytes.length;
    while (end > from && bytes[end - 1] === 0) end--;
    if (end < bytes.length) found.push(end);
  }
  return found.sort(function (a, b) { return a - b; });
}

// The gzip members of a file, inflated one after another as Python's gzip module reads them
// (`cat a.gz b.gz`, bgzip and pigz -i write several; zero bytes between members are padding).
// DecompressionStream stops with an error after its first member, and drops output it has not
// handed over when the error comes inside a chunk: so each member start (and each zero run)
// begins a chunk of its own, and a chunk refused right after a member ended starts the next one.
function Gunzip(sink, blob) {
  this.sink = sink; this.blob = blob; this.member = null; this.padding = false; this.carry = new Uint8Array(0);
  this.carryAt = 0;
}
Gunzip.prototype.open = function (at) {
  var stream = new DecompressionStream("gzip"), sink = this.sink;
  var member = { writer: stream.writable.getWriter(), wrote: 0, at: at, out: 0 };
  var reader = stream.readable.getReader();
  member.pump = (function pump() {
    return reader.read().then(function (r) { if (r.done) return; member.out += r.value.length; sink(r.value); return pump(); });
  })().catch(function () { /* the writer reports the same error */ });
  return member;
};
function junk(at) {
  return new Unread(at, "after byte " + at.toLocaleString() + " the file holds data that is neither another gzip " +
                        "member nor padding");
}
Gunzip.prototype.put = function (piece, at) {
  var self = this;
  if (this.padding) {
    if (isMember(piece, 0)) { this.padding = false; this.member = null; }
    else if (allZero(piece)) return Promise.resolve();
    else {
      var first = 0;
      while (piece[first] === 0) first++;
      return Promise.reject(junk(at + first));
    }
  }
  if (!this.member) this.member = this.open(at);
  var member = this.member;
  return member.writer.write(piece).then(function () { member.wrote += piece.length; }, function (error) {
    return member.pump.then(function () {
      if (member.wrote > 0 && (isMember(piece, 0) || allZero(piece.subarray(0, HOLD)))) {
        // the member had ended: a new one (or padding) starts with this piece
        self.member = null;
        if (isMember(piece, 0)) return self.put(piece, at);
        self.padding = true;
        return self.put(piece, at);
      }
      if (/junk/i.test(said(error))) return self.junkAfter(member, at, at + piece.length);
      throw new Unread(at, "the gzip data is not valid after byte " + at.toLocaleString() + " (" + said(error) + ")");
    });
  });
};
// A member ended inside the piece [from, to) and something other than a member or padding
// follows it: DecompressionStream says so, but neither where nor with all the output it had
// made (what it held is dropped with the error). So the member is inflated again from the file,
// the piece written in blocks of BLOCK bytes to find the block it ends in, then again with that
// block written a byte at a time, its output past what was read the first time going on to the
// matcher; the junk begins at the first byte the stream refuses, after any zero padding (as the
// command line reads it: rootcause/matching/scanner.py, `_Gunzip`).
var BLOCK = 4096;
Gunzip.prototype.junkAfter = function (member, from, to) {
  var self = this;
  return this.replay(member.at, from, to, BLOCK, null).then(function (block) {
    return self.replay(member.at, block, Math.min(block + BLOCK, to), 1, member.out);
  }).then(function (end) {
    return self.blob.slice(end, to).arrayBuffer().then(function (buffer) {
      var rest = new Uint8Array(buffer), first = 0;
      while (first < rest.length && rest[first] === 0) first++;
      throw junk(end + first);
    });
  });
};
// Inflates the member starting at byte `memberAt` of the file again: the bytes up to `from` in
// chunks, then those up to `to` in writes of `step` bytes; resolves with where the write the
// stream refused begins (`to` if none). Output past the first `delivered` bytes goes to the sink
// (none when `delivered` is null).
Gunzip.prototype.replay = function (memberAt, from, to, step, delivered) {
  var blob = this.blob, sink = this.sink;
  var stream = new DecompressionStream("gzip"), writer = stream.writable.getWriter(), reader = stream.readable.getReader();
  var out = 0;
  var pump = (function pump() {
    return reader.read().then(function (r) {
      if (r.done) return;
      if (delivered !== null) {
        var skip = Math.max(0, Math.min(r.value.length, delivered - out));
        if (skip < r.value.length) sink(r.value.subarray(skip));
      }
      out += r.value.length;
      return pump();
    });
  })().catch(function () { /* the writer's error is the answer */ });
  function write(at, end, size) {
    if (at >= end) return Promise.resolve(null);
    var stop = Math.min(end, at + CHUNK);
    return blob.slice(at, stop).arrayBuffer().then(function (buffer) {
      var bytes = new Uint8Array(buffer), k = 0;
      function next() {
        if (k >= bytes.length) return write(stop, end, size);
        var piece = bytes.slice(k, Math.min(bytes.length, k + size)), pieceAt = at + k;
        k += size;
        return writer.write(piece).then(next, function () { return pieceAt; });
      }
      return next();
    });
  }
  return write(memberAt, from, CHUNK).then(function (refused) {
    return refused !== null ? refused : write(from, to, step);
  }).then(function (refused) {
    if (refused === null) writer.abort().catch(function () { /* ends the pump */ });
    return pump.then(function () { return refused === null ? to : refused; });
  });
};
// Bytes of the compressed file as they are read; `last` on the final chunk.
Gunzip.prototype.bytes = function (chunk, at, last) {
  var bytes = chunk;
  if (this.carry.length) {
    bytes = new Uint8Array(this.carry.length + chunk.length);
    bytes.set(this.carry); bytes.set(chunk, this.carry.length);
    at = this.carryAt;
  }
  var decided = last ? bytes.length : Math.max(0, bytes.length - HOLD);
  // a few zero bytes where this round stops go to the next one: they may be padding before a header
  for (var limit = Math.max(0, decided - HOLD); !last && decided > limit && bytes[decided - 1] === 0; ) decided--;
  var points = cuts(bytes, 1, decided, last).filter(function (p) { return p < decided; });
  points.push(decided);
  this.carry = bytes.slice(decided); this.carryAt = at + decided;
  var self = this, from = 0, k = 0;
  function next() {
    if (k >= points.length) return Promise.resolve();
    var to = points[k++];
    if (to <= from) return next();
    var piece = bytes.subarray(from, to), pieceAt = at + from;
    from = to;
    return self.put(piece, pieceAt).then(next);
  }
  return next();
};
Gunzip.prototype.end = function (total) {
  var member = this.member;
  if (!member) return Promise.resolve();
  return member.writer.close().then(function () { return member.pump; }, function (error) {
    return member.pump.then(function () {
      throw new Unread(total, "the file ends inside a gzip member: it was cut short, or is not valid gzip (" +
                       said(error) + ")");
    });
  });
};

// Decompressed bytes to text for the matcher, as the command line's log reader does
// (rootcause/matching/scanner.py, `_LogReader`): a UTF-16 byte-order mark (FF FE or FE FF) makes
// the log UTF-16, the mark dropped; anything else is UTF-8 as Python's bytes.decode("utf-8",
// "replace") reads it (a UTF-8 byte-order mark stays text). A log whose first SNIFF bytes hold a
// carriage return and no line feed is CR-only: every carriage return ends a line.
var SNIFF = 64 << 10;
function LogText(feed) { this.feed = feed; this.head = []; this.headLength = 0; this.decoder = null; this.crOnly = false; }
LogText.prototype.decide = function () {
  var head = new Uint8Array(this.headLength), at = 0;
  this.head.forEach(function (part) { head.set(part, at); at += part.length; });
  this.head = null;
  var le = head[0] === 0xff && head[1] === 0xfe, be = head[0] === 0xfe && head[1] === 0xff;
  var cr = false, lf = false, i;
  if (le || be) {
    for (i = 2; i + 1 < Math.min(head.length, SNIFF); i += 2) {
      var unit = le ? head[i] | head[i + 1] << 8 : head[i] << 8 | head[i + 1];
      if (unit === 0x0d) cr = true; else if (unit === 0x0a) lf = true;
    }
  } else {
    for (i = 0; i < Math.min(head.length, SNIFF); i++) {
      if (head[i] === 0x0d) cr = true; else if (head[i] === 0x0a) lf = true;
    }
  }
  this.crOnly = cr && !lf;
  this.decoder = le || be ? new TextDecoder(le ? "utf-16le" : "utf-16be") : new TextDecoder("utf-8", { ignoreBOM: true });
  this.text(head, true);
};
LogText.prototype.text = function (bytes, stream) {
  var decoded = stream ? this.decoder.decode(bytes, { stream: true }) : this.decoder.decode();
  if (this.crOnly) decoded = decoded.replace(/\r/g, "\n");
  if (decoded) this.feed(decoded);
};
LogText.prototype.bytes = function (bytes) {
  if (this.decoder) return this.text(bytes, true);
  this.head.push(bytes.slice()); this.headLength += bytes.length;
  if (this.headLength >= SNIFF) this.decide();
};
LogText.prototype.end = function () {
  if (!this.decoder) this.decide();
  this.text(null, false);
};

// One file of log fed to a scan as the CLI's open_log reads it (gzip members, a UTF-16 mark, a
// CR-only log); the promise gives null, or where reading stopped ({at, reason, read}) when junk
// follows a gzip member. The file's last line is ended, so a next file starts a line of its own.
function feedBlob(blob, scan, id, progress) {
  var last = "\n";
  var decoder = new LogText(function (text) { if (text) { last = text.charAt(text.length - 1); scan.feed(text); } });
  var feedBytes = function (bytes) { decoder.bytes(bytes); };
  var read = 0;
  function finish(unread) {
    decoder.end();
    if (last !== "\n") scan.feed("\n");
    return unread;
  }
  return blob.slice(0, 2).arrayBuffer().then(function (head) {
    var magic = new Uint8Array(head), gz = magic.length === 2 && magic[0] === 0x1f && magic[1] === 0x8b;
    var gunzip = gz ? new Gunzip(feedBytes, blob) : null;
    var onBytes = gz ? function (bytes, at, final) { return gunzip.bytes(bytes, at, final); } : feedBytes;
    return readChunks(blob, onBytes, function (end) { read = end; progress(end, blob.size); }, id)
      .then(function () { return gz ? gunzip.end(blob.size) : null; })
      .then(function () { return finish(null); });
  }).catch(function (error) {
    if (!(error instanceof Unread)) throw error;
    return finish({ at: error.at, reason: error.reason, read: read });
  });
}

function run(msg) {
  var started = performance.now();
  return load().then(function (m) {
    var scan = m.start(), top = msg.top || 5;
    function progress(bytes, total) {
      self.postMessage({ type: "progress", id: msg.id, fraction: total ? bytes / total : 1, bytes: bytes, total: total });
    }
    function done(bytes, total, unread) {
      self.postMessage({ type: "report", id: msg.id, report: scan.finish(top), ms: performance.now() - started,
                         bytes: bytes, total: total, unread: unread });
    }
    if (msg.text != null) {
      var pasted = msg.text, slice = 1 << 20;
      for (var from = 0; from < pasted.length; from += slice) {
        scan.feed(pasted.slice(from, from + slice));
        if (from + slice < pasted.length) progress(from + slice, pasted.length);
      }
      return done(pasted.length, pasted.length, null);
    }
    var blob = msg.file || new Blob([msg.buffer]);
    return feedBlob(blob, scan, msg.id, progress).then(function (unread) {
      if (!unread) return done(blob.size, blob.size, null);
      done(unread.read, blob.size, { at: unread.at, total: blob.size, reason: unread.reason });
    });
  }).catch(function (error) {
    if (error instanceof Cancelled) return;
    self.postMessage({ type: "error", id: msg.id, message: String(error && error.message || error) });
  });
}

// -- Flight Recorder dumps (flight-recorder.js; the service's split_dumps and with_flight_recorder) --
var FR = self.RootcauseFlightRecorder;
var MAX_DUMP_BYTES = 256 * 1024 * 1024;

function isDump(file) {
  if (!FR) return Promise.resolve(false);
  return file.slice(0, 4096).arrayBuffer().then(function (head) { return FR.looksLikeDump(new Uint8Array(head)) !== null; });
}

function entryBrief(id, info) {
  return { entry: id, title: info.title, url: info.url, check: info.check, check_command: info.check_command };
}

// The log's report with the dumps' verdict, as encyclopedia.with_flight_recorder makes it.
function withFlightRecorder(data, verdict, infos) {
  verdict.divergences.forEach(function (d) {
    d.entries = d.entries.filter(function (id) { return infos[id]; }).map(function (id) { return entryBrief(id, infos[id]); });
  });
  var root = verdict.divergences.find(function (d) { return d.root; }) || verdict.divergences[0] || null;
  var first = data.first_failure, logRank = first ? first.rank : null, agreement = null;
  if (root && logRank !== null && logRank !== undefined) {
    var agrees = root.culprits.indexOf(logRank) >= 0, kind = root.kind.replace("_", " ");
    agreement = { agrees: agrees, log_rank: logRank, dump_ranks: root.culprits,
                  sentence: agrees ? "The dumps agree with the log: rank " + logRank + " failed first, and the dumps name it (" +
                                     kind + " in " + root.group + ")."
                                   : "The dumps and the log disagree: the log's first failure is on rank " + logRank +
                                     ", the dumps name " + root.culprits.join(", ") + " (" + kind + " in " + root.group + ")." };
    if (agrees) (first.evidence = first.evidence || []).push("the Flight Recorder dumps name it: " + root.sentence);
  }
  verdict.agreement = agreement;
  data.flight_recorder = verdict;
  if (root && (data.status === "none" || data.status === "consequences")) {
    data.headline = root.sentence + (data.status === "consequences" ? " " + data.headline : "");
    data.status = "known";
  } else if (!root && data.status === "none" && !data.lines_scanned) {
    data.headline = verdict.headline;
  }
  return data;
}

function runFiles(msg, files) {
  var started = performance.now();
  return load().then(function (m) {
    return Promise.all(files.map(isDump)).then(function (flags) {
      var dumps = files.filter(function (f, i) { return flags[i]; });
      var logs = files.filter(function (f, i) { return !flags[i]; });
      var tooLarge = dumps.find(function (f) { return f.size > MAX_DUMP_BYTES; });
      if (tooLarge) throw new Error(tooLarge.name + ": " + tooLarge.size.toLocaleString("en-US") + " bytes; the limit for a dump is " + MAX_DUMP_BYTES.toLocaleString("en-US"));
      return Promise.all(dumps.map(function (f) { return f.arrayBuffer(); })).then(function (buffers) {
        var verdict;
        try {
          verdict = FR.verdictOf(dumps.map(function (f, i) { return { name: f.name, bytes: new Uint8Array(buffers[i]) }; }));
        } catch (error) {
          if (error instanceof FR.DumpError) throw new Error(error.text);
          throw error;
        }
        var scan = m.start(), total = 0;
        // each log read as a log alone is (gzip, UTF-16, CR-only); a junk tail ends that log only
        var reads = logs.reduce(function (chain, log) {
          return chain.then(function () { return feedBlob(log, scan, msg.id, function () {}); })
            .then(function () { total += log.size; });
        }, Promise.resolve());
        return reads.then(function () {
          var report = withFlightRecorder(scan.finish(msg.top || 5), verdict, m.data.entries);
          self.postMessage({ type: "report", id: msg.id, report: report, ms: performance.now() - started,
                             bytes: total, total: total, unread: null });
        });
      });
    });
  }).catch(function (error) {
    self.postMessage({ type: "error", id: msg.id, message: String(error && error.message || error) });
  });
}

// One run at a time, in the order asked; a newer one stops the file being read at its next chunk.
var queue = Promise.resolve();
self.onmessage = function (event) {
  var msg = event.data;
  if (msg.type !== "run") return;
  latest = msg.id;
  queue = queue.then(function () {
    if (msg.files) return runFiles(msg, Array.from(msg.files));
    if (msg.file) return isDump(msg.file).then(function (dump) { return dump ? runFiles(msg, [msg.file]) : run(msg); });
    return run(msg);
  });
};
load().catch(function () { /* reported to the first run */ });
