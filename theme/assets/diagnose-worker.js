// Runs the matcher off the page's main thread, so a 10 MB log never freezes the page.
// Messages in:  {type: "run", id, text} or {type: "run", id, buffer, gzip: true}
// Messages out: {type: "progress", id, fraction} and {type: "report", id, report, ms} or {type: "error", id, message}
"use strict";
var params = new URLSearchParams(self.location.search);
importScripts(params.get("matcher"));
var matcher = null;

function load() {
  if (!matcher) {
    matcher = fetch(params.get("signatures")).then(function (r) {
      if (!r.ok) throw new Error("could not load signatures: HTTP " + r.status);
      return r.json();
    }).then(function (data) { return new self.RootcauseMatcher.Matcher(data); });
  }
  return matcher;
}

function inflate(bytes) {
  var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).arrayBuffer();
}

function decode(buffer) { return new TextDecoder().decode(buffer); }

// A .gz file may hold several gzip members one after another (`cat a.gz b.gz`, bgzip, pigz -i).
// Python's gzip module (the command line) reads them all; DecompressionStream stops with an error
// after the first. So on error, cut the file at gzip headers (1f 8b 08) and inflate member by
// member; a cut that falls inside a member (those bytes can occur in compressed data) fails and
// is skipped, so the member grows to the next cut.
function gunzip(buffer) {
  var bytes = new Uint8Array(buffer);
  return inflate(bytes).then(decode, function (firstError) {
    var cuts = [];
    for (var i = 1; i + 2 < bytes.length; i++) {
      if (bytes[i] === 0x1f && bytes[i + 1] === 0x8b && bytes[i + 2] === 0x08) cuts.push(i);
    }
    if (!cuts.length) throw firstError;
    cuts.push(bytes.length);
    var parts = [], from = 0, k = 0;
    function next() {
      if (from >= bytes.length) return new Blob(parts).arrayBuffer().then(decode);
      var to = cuts[k++];
      return inflate(bytes.subarray(from, to)).then(function (out) {
        parts.push(out);
        from = to;
        return next();
      }, function (error) {
        if (to === bytes.length) throw error;
        return next();
      });
    }
    return next();
  });
}

self.onmessage = function (event) {
  var msg = event.data;
  if (msg.type !== "run") return;
  var started = performance.now();
  var text = msg.gzip ? gunzip(msg.buffer) : Promise.resolve(msg.text != null ? msg.text : new TextDecoder().decode(msg.buffer));
  Promise.all([load(), text]).then(function (both) {
    var report = both[0].report(both[1], msg.top || 5, function (fraction) {
      self.postMessage({ type: "progress", id: msg.id, fraction: fraction });
    });
    self.postMessage({ type: "report", id: msg.id, report: report, ms: performance.now() - started });
  }).catch(function (error) {
    self.postMessage({ type: "error", id: msg.id, message: String(error && error.message || error) });
  });
};
load();
