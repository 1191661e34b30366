// The diagnose page: paste or drop a log (plain or .gz), or several files or a folder of PyTorch
// Flight Recorder dumps (with the job's logs or not), match it in a worker, show the report
// (and, first, anything the worker could not read).
// Nothing is sent anywhere: the worker only fetches this site's own signatures file, and only
// once the reader turns to the box (focus, paste, drop, file), not when the page opens.
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
  workerUrl.searchParams.set("re2js", new URL(form.getAttribute("data-re2js"), document.baseURI).href);
  workerUrl.searchParams.set("matcher", new URL(form.getAttribute("data-matcher"), document.baseURI).href);
  workerUrl.searchParams.set("signatures", new URL(form.getAttribute("data-signatures"), document.baseURI).href);
  if (form.getAttribute("data-flight-recorder")) {
    workerUrl.searchParams.set("fr", new URL(form.getAttribute("data-flight-recorder"), document.baseURI).href);
  }
  // The worker (and with it the matcher and the site's signatures, ~100 KB) starts when the reader
  // first reaches for the box: its focus, a paste, a drag over it or a file chosen; never on load.
  var worker = null;
  function ready() {
    if (!worker) {
      worker = new Worker(workerUrl.href);
      worker.onmessage = received;
    }
    return worker;
  }
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

  var ROLE_LABEL = { cause: "cause", consequence: "consequence of a failure elsewhere", warning: "warning" };

  function lineBlock(lines, more) {
    var pre = el("pre", "rc-lines");
    var code = el("code");
    lines.forEach(function (line) {
      code.appendChild(el("span", "rc-lineno", String(line.line).padStart(6, " ") + "  "));
      var rank = who(line);
      if (rank) code.appendChild(el("span", "rc-rank", "[" + rank + "] "));
      code.appendChild(el("mark", null, line.text));
      code.appendChild(document.createTextNode("\n"));
    });
    if (more) code.appendChild(el("span", "rc-muted", "… " + more + " more matched lines\n"));
    pre.appendChild(code);
    return pre;
  }

  function entryLink(title, url) {
    var a = el("a", null, title);
    a.href = root + url;
    return a;
  }

  // commands/diagnose.py query_text: the error's words and the frame that raised it
  var INCOMPLETE = "a Python traceback whose exception line is not in the log";
  function queryText(failure) {
    var text = failure.text === INCOMPLETE ? "" : failure.text;
    var location = failure.location || "";
    if (location.lastIndexOf('File "', 0) === 0) {
      var rest = location.slice(6), quote = rest.indexOf('"');
      var path = rest.slice(0, quote), after = rest.slice(quote + 1);
      location = path.split("/").slice(-3).join(" ") + after;
    }
    return (text + " " + location).trim();
  }

  // The "possibly related" tier: the site's own search index, asked about each unexplained error.
  function possible(report, into) {
    if (!report.unknown.length) return;
    window.RootcauseSite.searchIndex().then(function (idx) {
      return Promise.all(report.unknown.map(function (u) { return idx.query(queryText(u), 6); }));
    }).then(function (lists) {
      var section = null;
      lists.forEach(function (hits, i) {
        var best = hits.length ? hits[0].score : 0;
        var kept = hits.filter(function (h) { return h.matched >= 2 && h.score >= 0.6 * best; }).slice(0, 3);
        if (!kept.length) return;
        if (!section) {
          section = el("section", "rc-possible");
          section.appendChild(el("h2", null, "Possibly related, no signature matched"));
          into.appendChild(section);
        }
        section.appendChild(el("p", "rc-muted", "For: " + report.unknown[i].text));
        var list = el("ul");
        kept.forEach(function (h) { var li = el("li"); li.appendChild(entryLink(h.title, "entries/" + h.id + "/")); list.appendChild(li); });
        section.appendChild(list);
      });
    }).catch(function () { /* no index (an old copy of the site): no tier */ });
  }

  // The report's first sentence, what failed first, in the page's strongest type; the entry it
  // names is a link, and what the other processes show follows in body type.
  function headline(report, failed) {
    var p = el("p", "rc-headline" + (failed ? "" : " admonition note"));
    var text = report.headline, ff = report.first_failure;
    var named = ff && ff.entry ? report.results.concat(report.symptom ? report.symptom.entries : [])
      .filter(function (r) { return r.entry === ff.entry; })[0] : null;
    // the lead is all but the closing "<others> then show(s) consequences of it." (matcher.headline)
    var end = text.length, then = text.lastIndexOf(" then show");
    if (then >= 0 && /consequences of it\.$/.test(text)) end = text.lastIndexOf(". ", then) + 1 || text.length;
    var at = named ? text.slice(0, end).indexOf(named.title) : -1;
    var lead = el("span", "rc-headline__first");
    if (at >= 0) {
      lead.appendChild(document.createTextNode(text.slice(0, at)));
      lead.appendChild(entryLink(named.title, named.url));
      lead.appendChild(document.createTextNode(text.slice(at + named.title.length, end)));
    } else lead.textContent = text.slice(0, end);
    p.appendChild(lead);
    var rest = text.slice(end);
    if (rest) p.appendChild(el("span", "rc-headline__then", rest));
    return p;
  }

  // The Flight Recorder's verdict (commands/diagnose.py print_flight_recorder): each divergence,
  // root cause first, with its evidence and the entries that explain it; then a compact table per
  // process group: each rank's last sequence number and state.
  var KIND_LABEL = { missing: "never entered", lagging: "lagging", mismatch: "mismatched call", no_dump: "no dump",
                     p2p_unmatched: "p2p without partner" };
  function flightRecorder(fr) {
    var section = el("section", "rc-flight-recorder");
    section.appendChild(el("h2", null, "Flight Recorder: " + fr.dumps + " " + fr.formats.join("/") + " dumps, format " +
                                       fr.version + " (" + fr.backends.join(", ") + ")"));
    if (fr.agreement) section.appendChild(el("p", "rc-fr-agreement", fr.agreement.sentence));
    if (!fr.divergences.length) section.appendChild(el("p", null, fr.headline));
    fr.divergences.slice(0, 6).forEach(function (d) {
      var box = el("article", "rc-fr-divergence" + (d.root ? " rc-fr-divergence--root" : ""));
      box.appendChild(el("p", "rc-fr-sentence", d.sentence));
      box.appendChild(el("p", "rc-muted", KIND_LABEL[d.kind] + "; " +
                                          (d.root ? "root cause" : "consequence of " + d.explained_by.join(", "))));
      if (d.kind === "mismatch") {
        var table = el("table", "rc-fr-calls"), head = el("tr");
        ["ranks", "operation", "input sizes", "output sizes", "dtypes"].forEach(function (t) { head.appendChild(el("th", null, t)); });
        table.appendChild(head);
        d.calls.forEach(function (c) {
          var row = el("tr");
          [c.ranks.join(", "), c.op, JSON.stringify(c.input_sizes), JSON.stringify(c.output_sizes), c.input_dtypes.join(", ")]
            .forEach(function (t) { row.appendChild(el("td", null, t)); });
          table.appendChild(row);
        });
        box.appendChild(table);
      }
      if (d.behind) {
        box.appendChild(el("p", "rc-muted", Object.keys(d.behind).map(function (r) { return "rank " + r + ": " + d.behind[r] + " behind"; }).join(", ")));
      }
      if (d.stack && d.stack.length) {
        box.appendChild(el("p", "rc-muted", "Rank " + d.stack_rank + "'s last collective was called from:"));
        box.appendChild(lineBlock(d.stack.slice(0, 6).map(function (f) { return { line: f.line, text: f.filename + " in " + f.name }; }), 0));
      }
      if (d.root && d.entries.length) {
        var list = el("ul");
        d.entries.slice(0, 2).forEach(function (hit) {
          var li = el("li");
          li.appendChild(entryLink(hit.title, hit.url));
          if (hit.check) { li.appendChild(el("br")); li.appendChild(el("strong", null, "Check: ")); li.appendChild(document.createTextNode(hit.check)); }
          list.appendChild(li);
        });
        box.appendChild(list);
      }
      section.appendChild(box);
    });
    var groups = el("table", "rc-fr-groups"), top = el("tr");
    ["process group", "waits in", "rank: last sequence number (state)"].forEach(function (t) { top.appendChild(el("th", null, t)); });
    groups.appendChild(top);
    fr.groups.slice(0, 24).forEach(function (g) {
      var row = el("tr");
      row.appendChild(el("td", null, g.group));
      row.appendChild(el("td", null, "#" + g.top_seq + " " + (g.top_op || "")));
      row.appendChild(el("td", null, g.ranks.slice(0, 64).map(function (r) {
        return r.rank + ":" + (r.dump ? r.last_seq + (r.state && r.state !== "scheduled" ? " " + r.state : "") : "no dump");
      }).join("  ")));
      groups.appendChild(row);
    });
    section.appendChild(groups);
    fr.notes.forEach(function (n) { section.appendChild(el("p", "rc-muted", n)); });
    return section;
  }

  // What the loss the log ends with shows (matcher.lossSymptom): the entry that explains it, how to
  // confirm and fix it, then the other entries for that sign (as the text report)
  function symptom(found) {
    var first = found.entries[0], section = el("section", "rc-symptom");
    var box = el("article", "rc-finding rc-finding--cause rc-finding--first");
    var h = el("h2"); h.appendChild(entryLink(first.title, first.url)); box.appendChild(h);
    box.appendChild(el("p", "rc-finding__meta", "what the loss shows · no error was printed"));
    box.appendChild(el("p", null, first.summary));
    box.appendChild(lineBlock([{ line: found.line, rank: found.rank, host: found.host, text: found.text }], 0));
    if (first.check) {
      var check = el("p"); check.appendChild(el("strong", null, "Confirm: ")); check.appendChild(document.createTextNode(first.check));
      box.appendChild(check);
      if (first.check_command) { var pre = el("pre", "rc-check"); pre.appendChild(el("code", null, first.check_command)); box.appendChild(pre); }
    }
    if (first.fix) { var fix = el("p"); fix.appendChild(el("strong", null, "Then fix: ")); fix.appendChild(document.createTextNode(first.fix)); box.appendChild(fix); }
    section.appendChild(box);
    if (found.entries.length > 1) {
      var also = el("section", "rc-notes");
      also.appendChild(el("h2", null, "Also explains such a loss"));
      var list = el("ul");
      found.entries.slice(1).forEach(function (hit) { var li = el("li"); li.appendChild(entryLink(hit.title, hit.url)); list.appendChild(li); });
      also.appendChild(list);
      section.appendChild(also);
    }
    return section;
  }

  function megabytes(bytes) { return (bytes / 1048576).toLocaleString(undefined, { maximumFractionDigits: 1 }) + " MB"; }

  function render(report, ms, source, unread) {
    out.textContent = "";
    if (unread) {
      // what could not be read, before anything else: the report covers only the rest
      out.appendChild(el("p", "admonition warning rc-unread", "Not all of " + (source || "the log") + " was read: " +
        unread.reason + ". The report below covers the " + report.lines_scanned.toLocaleString() +
        " lines read up to byte " + unread.at.toLocaleString() + " of " + unread.total.toLocaleString() + "."));
    }
    var failed = report.status !== "none";
    out.appendChild(headline(report, failed));
    if (report.flight_recorder) out.appendChild(flightRecorder(report.flight_recorder));
    var ff = report.first_failure;
    if (ff) {
      var where = "Line " + ff.line + (ff.time ? ", " + ff.time : "") + ": ";
      var detail = el("p", "rc-first-detail");
      detail.appendChild(document.createTextNode(where));
      detail.appendChild(el("code", null, ff.text));
      out.appendChild(detail);
      if (ff.evidence && ff.evidence.length) {
        var why = el("ul", "rc-evidence");
        ff.evidence.forEach(function (reason) { why.appendChild(el("li", null, reason)); });
        out.appendChild(why);
      }
    }
    if (report.unknown.length) {
      var unknown = el("section", "rc-unknown");
      unknown.appendChild(el("h2", null, "Errors no entry explains"));
      report.unknown.forEach(function (u) {
        unknown.appendChild(lineBlock([{ line: u.line, rank: u.rank, host: u.host, text: u.text }], 0));
        if (u.location) unknown.appendChild(el("p", "rc-muted", u.location));
      });
      out.appendChild(unknown);
      possible(report, out);
    }
    if (report.symptom) out.appendChild(symptom(report.symptom));
    var cause = report.results.filter(function (r) { return r.role === "cause"; })[0] || null;
    var following = report.status !== "consequences" || cause !== null;  // as ranking._steady
    report.results.forEach(function (r, i) {
      var box = el("article", "rc-finding rc-finding--" + r.role + (i === 0 && report.status === "known" ? " rc-finding--first" : ""));
      var h = el("h2");
      h.appendChild(entryLink(r.title, r.url));
      box.appendChild(h);
      var meta = el("p", "rc-finding__meta");
      meta.appendChild(el("span", "rc-role", ROLE_LABEL[r.role]));
      meta.appendChild(document.createTextNode(" · "));
      var sure = r.role === "consequence" && following ? "rc-confidence--none" : "rc-confidence--" + r.confidence;
      meta.appendChild(el("span", "rc-confidence " + sure, r.confidence_text));
      if (r.ranks.length) meta.appendChild(document.createTextNode(" · rank " + r.ranks.join(", ")));
      box.appendChild(meta);
      if (r.role === "consequence" && cause) {
        // the entry this one follows from, as the report lists it above
        var from = el("p", "rc-follows");
        from.appendChild(document.createTextNode("Follows from: "));
        from.appendChild(entryLink(cause.title, cause.url));
        box.appendChild(from);
      }
      box.appendChild(el("p", null, r.summary));
      box.appendChild(lineBlock(r.lines, r.more_lines));
      // how to confirm this cause on the machine comes first, then the fix (as the text report)
      if (r.check && r.role === "cause") {
        var check = el("p"); check.appendChild(el("strong", null, "Confirm: ")); check.appendChild(document.createTextNode(r.check));
        box.appendChild(check);
        if (r.check_command) { var pre = el("pre", "rc-check"); pre.appendChild(el("code", null, r.check_command)); box.appendChild(pre); }
      }
      if (r.fix) { var fix = el("p"); fix.appendChild(el("strong", null, "Then fix: ")); fix.appendChild(document.createTextNode(r.fix)); box.appendChild(fix); }
      out.appendChild(box);
    });
    if (report.stopped) {
      // no error line, but the log stops in a start-up phase: the causes of a hang there, never a diagnosis
      var stop = el("section", "rc-notes");
      stop.appendChild(el("h2", null, "The log stops during " + report.stopped.title + " (line " + report.stopped.line + ")"));
      if (report.stopped.entries.length) {
        var causes = el("ul");
        report.stopped.entries.forEach(function (hit) { var li = el("li"); li.appendChild(entryLink(hit.title, hit.url)); causes.appendChild(li); });
        stop.appendChild(el("p", null, "Possible causes of a hang there:"));
        stop.appendChild(causes);
      }
      out.appendChild(stop);
    }
    if (report.notes.length) {
      var notes = el("section", "rc-notes");
      notes.appendChild(el("h2", null, "Notes: benign warnings, not the failure"));
      var list = el("ul");
      report.notes.forEach(function (n) {
        var li = el("li");
        li.appendChild(entryLink(n.title, n.url));
        li.appendChild(document.createTextNode(" (" + n.count + "×)"));
        list.appendChild(li);
      });
      notes.appendChild(list);
      out.appendChild(notes);
    }
    if (!failed && !report.notes.length) {
      out.appendChild(el("p", "rc-muted", "If the job did fail, search for its last error line with the search box, or add an entry for it."));
    }
    if (report.flight_recorder && !report.lines_scanned) return;
    out.appendChild(el("p", "rc-muted rc-scanned", "Scanned " + report.lines_scanned.toLocaleString() + " lines" + (source ? " of " + source : "") + " in " + Math.round(ms) + " ms, in this browser."));
  }

  function received(event) {
    var msg = event.data;
    if (msg.id !== serial) return;
    if (msg.type === "progress") {
      status.textContent = "Scanning… " + Math.round(msg.fraction * 100) + "%" +
        (pendingName ? " of " + pendingName + " (" + megabytes(msg.bytes) + " of " + megabytes(msg.total) + ")" : "");
    }
    else if (msg.type === "report") { status.textContent = ""; render(msg.report, msg.ms, pendingName, msg.unread); }
    else if (msg.type === "error") { status.textContent = "Could not diagnose: " + msg.message; }
  }

  function runText(text, name) {
    serial++;
    pendingName = name || "";
    status.textContent = "Scanning…";
    ready().postMessage({ type: "run", id: serial, text: text, top: 5 });
  }

  // The file itself goes to the worker, which reads it in chunks: a log of gigabytes is never
  // one buffer or one string.
  function runFile(file) {
    serial++;
    pendingName = file.name;
    status.textContent = "Scanning " + file.name + "…";
    ready().postMessage({ type: "run", id: serial, file: file, top: 5 });
    textarea.value = "";
    textarea.placeholder = "Diagnosed " + file.name + " (" + file.size.toLocaleString() + " bytes). Paste another log or drop another file.";
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
  // Several files (a folder of Flight Recorder dumps, with or without the job's logs) go to the
  // worker together: it tells dumps from logs by content and reads them as one incident.
  function runFiles(files) {
    if (files.length === 1) return runFile(files[0]);
    serial++;
    pendingName = files.length + " files";
    status.textContent = "Reading " + files.length + " files…";
    ready().postMessage({ type: "run", id: serial, files: files, top: 5 });
    textarea.value = "";
    textarea.placeholder = "Diagnosed " + files.length + " files. Paste another log or drop other files.";
  }
  // a dropped folder: its files (one level, as the command line reads a folder)
  function dropped(transfer) {
    var items = transfer.items ? Array.from(transfer.items) : [];
    var folders = items.map(function (i) { return i.webkitGetAsEntry ? i.webkitGetAsEntry() : null; })
      .filter(function (e) { return e && e.isDirectory; });
    if (!folders.length) return Promise.resolve(Array.from(transfer.files || []));
    return Promise.all(folders.map(function (folder) {
      return new Promise(function (resolve) {
        var reader = folder.createReader(), found = [];
        (function more() {
          reader.readEntries(function (entries) {
            if (!entries.length) return resolve(found);
            found = found.concat(entries.filter(function (e) { return e.isFile; }));
            more();
          }, function () { resolve(found); });
        })();
      }).then(function (entries) {
        return Promise.all(entries.map(function (e) { return new Promise(function (ok) { e.file(ok, function () { ok(null); }); }); }));
      });
    })).then(function (lists) { return [].concat.apply([], lists).filter(Boolean); });
  }
  fileInput.addEventListener("change", function () { if (fileInput.files.length) runFiles(Array.from(fileInput.files)); });
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
  textarea.addEventListener("focus", ready);
  fileInput.addEventListener("click", ready);
  ["dragenter", "dragover"].forEach(function (type) {
    form.addEventListener(type, function (event) { event.preventDefault(); ready(); form.classList.add("rc-dragging"); });
  });
  ["dragleave", "drop"].forEach(function (type) {
    form.addEventListener(type, function () { form.classList.remove("rc-dragging"); });
  });
  form.addEventListener("drop", function (event) {
    event.preventDefault();
    if (!event.dataTransfer) return;
    dropped(event.dataTransfer).then(function (files) { if (files.length) runFiles(files); });
  });
})();
