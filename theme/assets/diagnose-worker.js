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

function gunzip(buffer) {
  var stream = new Blob([buffer]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
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
