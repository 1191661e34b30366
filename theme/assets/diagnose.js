// The diagnose page: paste or drop a log (plain or .gz), match it in a worker, show the report.
// Nothing is sent anywhere: the worker only fetches this site's own signatures file.
(function () {
  "use strict";
  var form = document.getElementById("rc-diagnose");
  if (!form) return;
  var root = document.body.getAttribute("data-root") || "./";
  var textarea = document.getElementById("rc-log");
  var fileInput = document.getElementById("rc-file");
  var status = document.getElementById("rc-status");
  var out = document.getElementById("rc-report");
  var workerUrl = new URL(form.getAttribute("data-worker"), document.baseURI);
  workerUrl.searchParams.set("matcher", new URL(form.getAttribute("data-matcher"), document.baseURI).href);
  workerUrl.searchParams.set("signatures", new URL(form.getAttribute("data-signatures"), document.baseURI).href);
  var worker = new Worker(workerUrl.href);
  var serial = 0;
  var pendingName = "";

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text != null) node.textContent = text;
    return node;
  }

  function who(line) {
    var parts = [];
    if (line.host) parts.push(line.host);
    if (line.rank !== null && line.rank !== undefined) parts.push("rank " + line.rank);
    return parts.join(" ");
  }

  function streamLabel(stream) {
    var cut = stream.lastIndexOf("#");
    var host = stream.slice(0, cut), rank = stream.slice(cut + 1);
    return [host, rank !== "" ? "rank " + rank : ""].filter(Boolean).join(" ");
  }

  function render(report, ms, source) {
    out.textContent = "";
    var head = el("p", "rc-muted", "Scanned " + report.lines_scanned.toLocaleString() + " lines" + (source ? " of " + source : "") + " in " + Math.round(ms) + " ms, in this browser.");
    out.appendChild(head);
    if (!report.results.length) {
      out.appendChild(el("p", "admonition note", "No known failure found. Search for the last error line with the search box, or add an entry for it."));
      return;
    }
    var ff = report.first_failure;
    if (ff && (ff.rank !== null || ff.host)) {
      var text = "First failure: " + who(ff) + " at line " + ff.line + ".";
      if (report.consequence_streams.length) text += " Only consequences on " + report.consequence_streams.map(streamLabel).join(", ") + ".";
      out.appendChild(el("p", "admonition warning rc-first", text));
    }
    report.results.forEach(function (r, i) {
      var box = el("article", "rc-finding" + (i === 0 ? " rc-finding--first" : ""));
      var h = el("h3");
      var a = el("a", null, r.title);
      a.href = root + r.url;
      h.appendChild(a);
      box.appendChild(h);
      box.appendChild(el("p", "rc-muted", "Confidence: " + r.confidence + " · signature " + r.signatures.join(", ") + (i === 0 && report.results.length > 1 ? " · most likely cause" : "")));
      box.appendChild(el("p", null, r.summary));
      var pre = el("pre", "rc-lines");
      var code = el("code");
      r.lines.forEach(function (line) {
        code.appendChild(el("span", "rc-lineno", String(line.line).padStart(6, " ") + "  "));
        var rank = who(line);
        if (rank) code.appendChild(el("span", "rc-rank", "[" + rank + "] "));
        code.appendChild(el("mark", null, line.text));
        code.appendChild(document.createTextNode("\n"));
      });
      if (r.more_lines) code.appendChild(el("span", "rc-muted", "… " + r.more_lines + " more matched lines\n"));
      pre.appendChild(code);
      box.appendChild(pre);
      if (r.fix) { var fix = el("p"); fix.appendChild(el("strong", null, "First step: ")); fix.appendChild(document.createTextNode(r.fix)); box.appendChild(fix); }
      out.appendChild(box);
    });
  }

  worker.onmessage = function (event) {
    var msg = event.data;
    if (msg.id !== serial) return;
    if (msg.type === "progress") status.textContent = "Scanning… " + Math.round(msg.fraction * 100) + "%";
    else if (msg.type === "report") { status.textContent = ""; render(msg.report, msg.ms, pendingName); }
    else if (msg.type === "error") { status.textContent = "Could not diagnose: " + msg.message; }
  };

  function runText(text, name) {
    serial++;
    pendingName = name || "";
    status.textContent = "Scanning…";
    worker.postMessage({ type: "run", id: serial, text: text, top: 5 });
  }

  function runFile(file) {
    status.textContent = "Reading " + file.name + "…";
    file.arrayBuffer().then(function (buffer) {
      var bytes = new Uint8Array(buffer, 0, Math.min(2, buffer.byteLength));
      var gz = bytes.length === 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
      serial++;
      pendingName = file.name;
      status.textContent = "Scanning " + file.name + "…";
      worker.postMessage({ type: "run", id: serial, buffer: buffer, gzip: gz, top: 5 }, [buffer]);
      textarea.value = "";
      textarea.placeholder = "Diagnosed " + file.name + " (" + file.size.toLocaleString() + " bytes). Paste another log or drop another file.";
    });
  }

  // A large paste goes straight to the worker: laying out megabytes of text in the box would
  // block the page for seconds. The box then shows the start of it.
  var EXCERPT = 20000;
  var pasted = null;  // {text, shown}: the full pasted log while the box shows its excerpt
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var text = pasted && textarea.value === pasted.shown ? pasted.text : textarea.value;
    runText(text, "");
  });
  fileInput.addEventListener("change", function () { if (fileInput.files[0]) runFile(fileInput.files[0]); });
  textarea.addEventListener("paste", function (event) {
    var data = event.clipboardData && event.clipboardData.getData("text/plain");
    if (data && data.length > EXCERPT) {
      event.preventDefault();
      var shown = data.slice(0, EXCERPT) + "\n… (" + data.length.toLocaleString() + " characters pasted; all are diagnosed)";
      pasted = { text: data, shown: shown };
      textarea.value = shown;
      runText(data, "");
      return;
    }
    pasted = null;
    setTimeout(function () { runText(textarea.value, ""); }, 0);
  });
  ["dragenter", "dragover"].forEach(function (type) {
    form.addEventListener(type, function (event) { event.preventDefault(); form.classList.add("rc-dragging"); });
  });
  ["dragleave", "drop"].forEach(function (type) {
    form.addEventListener(type, function () { form.classList.remove("rc-dragging"); });
  });
  form.addEventListener("drop", function (event) {
    event.preventDefault();
    var file = event.dataTransfer && event.dataTransfer.files[0];
    if (file) runFile(file);
  });
})();
