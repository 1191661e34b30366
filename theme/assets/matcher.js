// The in-browser twin of rootcause/matching/ (scanner.py, ranking.py, signatures.py, logline.py): the same line rules,
// the same signature semantics, the same ranking, on the data of search/signatures.json.
// The tests run both on the same logs and require identical reports.
// Works as a browser global (RootcauseMatcher), in a worker (importScripts) and in Node (require).
(function (root) {
  "use strict";

  // -- Aho-Corasick over the anchors: which anchors occur in a line, in one pass ------------------
  function Automaton(words) {
    var next = [new Map()], fail = [0], out = [[]];
    words.forEach(function (word, id) {
      var node = 0;
      for (var i = 0; i < word.length; i++) {
        var ch = word.charCodeAt(i);
        var child = next[node].get(ch);
        if (child === undefined) { child = next.length; next.push(new Map()); fail.push(0); out.push([]); next[node].set(ch, child); }
        node = child;
      }
      out[node].push(id);
    });
    var queue = [];
    next[0].forEach(function (child) { queue.push(child); });
    for (var q = 0; q < queue.length; q++) {
      var node = queue[q];
      next[node].forEach(function (child, ch) {
        var f = fail[node];
        while (f && !next[f].has(ch)) f = fail[f];
        var target = next[f].get(ch);
        fail[child] = target !== undefined && target !== child ? target : 0;
        if (out[fail[child]].length) out[child] = out[child].concat(out[fail[child]]);
        queue.push(child);
      });
    }
    this.next = next; this.fail = fail; this.out = out;
  }
  Automaton.prototype.find = function (text) {
    var node = 0, found = null, next = this.next, fail = this.fail, out = this.out;
    for (var i = 0; i < text.length; i++) {
      var ch = text.charCodeAt(i), child;
      while ((child = next[node].get(ch)) === undefined && node) node = fail[node];
      node = child === undefined ? 0 : child;
      if (out[node].length) { if (!found) found = new Set(); for (var k = 0; k < out[node].length; k++) found.add(out[node][k]); }
    }
    return found;
  };

  // -- lines ----------------------------------------------------------------------------------
  function compileRules(rules) {
    return rules.map(function (r) { return [r[0], new RegExp(r[1]), r[2]]; });
  }

  // The first `max` characters, counted as Python counts them (code points, not UTF-16 units).
  function cut(raw, max) {
    if (raw.length <= max) return raw;
    var units = 0;
    for (var points = 0; points < max && units < raw.length; points++) {
      var c = raw.charCodeAt(units);
      units += c >= 0xD800 && c <= 0xDBFF && (raw.charCodeAt(units + 1) & 0xFC00) === 0xDC00 ? 2 : 1;
    }
    return raw.slice(0, units);
  }

  function parseLine(raw, rules, limits) {
    var text = cut(raw, limits.max_line).replace(/[\r\n]+$/, "");
    var rank = null, host = null, time = null;
    for (var round = 0; round < limits.max_prefixes; round++) {
      var applied = false;
      for (var i = 0; i < rules.length; i++) {
        var m = rules[i][1].exec(text);
        if (!m || !m[0].length) continue;
        var kind = rules[i][2];
        if (kind === "rank") rank = parseInt(m[1], 10);
        else if (kind === "host") host = m[1];
        else if (kind === "host+device") { host = m[1]; if (rank === null) rank = parseInt(m[2], 10); }
        else if (kind === "time" && time === null) time = m[0].replace(/^[ \t\[\]:]+|[ \t\[\]:]+$/g, "");
        text = text.slice(m[0].length);
        applied = true;
        break;
      }
      if (!applied) break;
    }
    var stream = rank === null && host === null ? "" : (host || "") + "#" + (rank === null ? "" : rank);
    return { text: text, rank: rank, host: host, time: time, stream: stream };
  }

  // -- the compiled catalogue --------------------------------------------------------------------
  // RE2's "." matches any character but "\n"; JavaScript's also refuses "\r", "\u2028" and "\u2029".
  // A line never holds "\n", so the dotAll flag makes both engines agree on every line.
  function signatureRegExp(source) { return new RegExp(source, "s"); }

  function Matcher(data) {
    this.data = data;
    this.limits = data.limits;
    this.rules = compileRules(data.rules);
    var anchors = [], byAnchor = [], position = new Map();
    this.signatures = data.signatures.map(function (s) {
      var sig = {
        entry: s.entry, index: s.index, specificity: s.specificity, within: s.within || data.limits.default_within,
        multiline: s.steps.length > 1,
        steps: s.steps.map(function (p) { return signatureRegExp(p[0]); }),
        unless: (s.unless || []).map(function (p) { return signatureRegExp(p[0]); })
      };
      s.steps.concat(s.unless || []).forEach(function (p) {
        var anchor = p[1];
        if (!position.has(anchor)) { position.set(anchor, anchors.length); anchors.push(anchor); byAnchor.push([]); }
        var bucket = byAnchor[position.get(anchor)];
        if (!bucket.length || bucket[bucket.length - 1] !== sig) bucket.push(sig);
      });
      return sig;
    });
    this.byAnchor = byAnchor;
    this.automaton = new Automaton(anchors);
  }

  Matcher.prototype.candidates = function (text) {
    var ids = this.automaton.find(text);
    if (!ids) return [];
    var seen = new Set(), result = [];
    var self = this;
    Array.from(ids).sort(function (a, b) { return a - b; }).forEach(function (id) {
      self.byAnchor[id].forEach(function (sig) { if (!seen.has(sig)) { seen.add(sig); result.push(sig); } });
    });
    return result;
  };

  function fits(a, b) { return !a || !b || a === b; }  // an unprefixed line fits any stream

  function vetoed(sig, numbered, first, last, stream) {
    if (!sig.unless.length) return false;
    var low = numbered[first][0] - sig.within, high = numbered[last][0] + sig.within;
    var position = first;
    while (position > 0 && numbered[position - 1][0] >= low) position--;
    for (var i = position; i < numbered.length; i++) {
      var number = numbered[i][0], line = numbered[i][1];
      if (number > high) break;
      if (fits(line.stream, stream) && sig.unless.some(function (re) { return re.test(line.text); })) return true;
    }
    return false;
  }

  function findMatches(sig, numbered, firstOnly) {
    var found = [];
    if (!sig.multiline) {
      for (var p = 0; p < numbered.length; p++) {
        if (sig.steps[0].test(numbered[p][1].text) && !vetoed(sig, numbered, p, p, numbered[p][1].stream)) {
          found.push({ sig: sig, lines: [numbered[p][0]], stream: numbered[p][1].stream });
          if (firstOnly) break;
        }
      }
      return found;
    }
    var busy = new Map();
    for (var position = 0; position < numbered.length; position++) {
      var start = numbered[position][0], line = numbered[position][1];
      var until = busy.has(line.stream) ? busy.get(line.stream) : -1;
      if (start <= until || !sig.steps[0].test(line.text)) continue;
      var matched = [start], stream = line.stream, lastPosition = position, step = 1;
      for (var later = position + 1; later < numbered.length; later++) {
        var number = numbered[later][0], other = numbered[later][1];
        if (number > start + sig.within) break;
        if (fits(other.stream, stream) && sig.steps[step].test(other.text)) {
          matched.push(number); stream = stream || other.stream; lastPosition = later; step++;
          if (step === sig.steps.length) break;
        }
      }
      if (step === sig.steps.length && !vetoed(sig, numbered, position, lastPosition, stream)) {
        found.push({ sig: sig, lines: matched, stream: stream });
        busy.set(line.stream, matched[matched.length - 1]);
        if (firstOnly) break;
      }
    }
    return found;
  }

  // Scan a whole log text. `progress(fraction)` is called now and then for long logs.
  Matcher.prototype.scan = function (text, progress) {
    var limits = this.limits;
    var perSig = new Map(), hitLines = new Map();
    var lines = text.split("\n");
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    for (var n = 0; n < lines.length; n++) {
      // before any `continue`: most lines are not candidates, and a long log must still show progress
      if (progress && n && n % 20000 === 0) progress(n / lines.length);
      var raw = lines[n];
      if (!this.automaton.find(raw)) continue;
      var line = parseLine(raw, this.rules, limits);
      var candidates = this.candidates(line.text);
      if (!candidates.length) continue;
      hitLines.set(n, line);
      for (var c = 0; c < candidates.length; c++) {
        var bucket = perSig.get(candidates[c]);
        if (!bucket) { bucket = []; perSig.set(candidates[c], bucket); }
        if (bucket.length < limits.max_hits_per_signature) bucket.push([n, line]);
      }
    }
    var matches = [], kept = new Set();
    this.signatures.forEach(function (sig) {
      var numbered = perSig.get(sig);
      if (!numbered) return;
      findMatches(sig, numbered, false).slice(0, limits.max_matches_per_signature).forEach(function (m) {
        matches.push(m);
        m.lines.forEach(function (k) { kept.add(k); });
      });
    });
    matches.sort(function (a, b) {
      return a.lines[0] - b.lines[0] || (a.sig.entry < b.sig.entry ? -1 : a.sig.entry > b.sig.entry ? 1 : 0) || a.sig.index - b.sig.index;
    });
    hitLines.forEach(function (_v, k) { if (!kept.has(k)) hitLines.delete(k); });
    return { linesScanned: lines.length, matches: matches, hitLines: hitLines };
  };

  Matcher.prototype.rank = function (scan) {
    var consequences = this.data.consequences;
    var byEntry = new Map();
    scan.matches.forEach(function (m) {
      if (!byEntry.has(m.sig.entry)) byEntry.set(m.sig.entry, []);
      byEntry.get(m.sig.entry).push(m);
    });
    var findings = [];
    byEntry.forEach(function (matches, entry) {
      var distinct = new Map();
      matches.forEach(function (m) { distinct.set(m.sig.index, m.sig); });
      var sigs = Array.from(distinct.values());
      var best = Math.max.apply(null, sigs.map(function (s) { return s.specificity; }));
      var score = best + 10 * (sigs.length - 1);
      var multiline = sigs.some(function (s) { return s.multiline; });
      var confidence = multiline || best >= 40 || sigs.length > 1 ? "high" : best >= 25 ? "medium" : "low";
      var first = Math.min.apply(null, matches.map(function (m) { return m.lines[0]; }));
      findings.push({ entry: entry, score: score, confidence: confidence, matches: matches, first: first });
    });
    findings.sort(function (a, b) { return b.score - a.score || a.first - b.first || (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0); });
    findings = causesFirst(findings, consequences);
    var firstFailure = null, consequenceStreams = [];
    if (findings.length) {
      var top = findings[0];
      firstFailure = firstFailureOf(top, scan.hitLines);
      var causeStreams = new Set(top.matches.map(function (m) { return m.stream; }));
      var downstream = new Set(consequences[top.entry] || []);
      var streams = new Set();
      findings.forEach(function (f) {
        if (!downstream.has(f.entry)) return;
        f.matches.forEach(function (m) { if (m.stream && !causeStreams.has(m.stream)) streams.add(m.stream); });
      });
      consequenceStreams = Array.from(streams).sort();
    }
    return { findings: findings, firstFailure: firstFailure, consequenceStreams: consequenceStreams };
  };

  // The earliest matched line of the top finding that names its process (see diagnose.py).
  function firstFailureOf(top, hitLines) {
    var ordered = top.matches.map(function (m, i) { return [m, i]; }).sort(function (a, b) {
      return a[0].lines[0] - b[0].lines[0] || a[1] - b[1];
    }).map(function (pair) { return pair[0]; });
    for (var i = 0; i < ordered.length; i++) {
      for (var j = 0; j < ordered[i].lines.length; j++) {
        var line = hitLines.get(ordered[i].lines[j]);
        if (line && (line.rank !== null || line.host)) {
          return { line: ordered[i].lines[j] + 1, stream: ordered[i].stream, rank: line.rank, host: line.host };
        }
      }
    }
    return { line: ordered[0].lines[0] + 1, stream: ordered[0].stream, rank: null, host: null };
  }

  function causesFirst(findings, consequences) {
    var order = findings.slice();
    for (var round = 0; round < order.length * order.length + 1; round++) {
      var moved = false;
      var position = new Map();
      order.forEach(function (f, i) { position.set(f.entry, i); });
      for (var i = 0; i < order.length; i++) {
        var cause = order[i];
        var above = (consequences[cause.entry] || []).filter(function (c) { return position.has(c) && position.get(c) < position.get(cause.entry); })
          .map(function (c) { return position.get(c); });
        if (above.length) {
          order.splice(i, 1);
          order.splice(Math.min.apply(null, above), 0, cause);
          moved = true;
          break;
        }
      }
      if (!moved) break;
    }
    return order;
  }

  // The report, field for field as rootcause.matching.ranking.report_json (bytes_scanned aside).
  Matcher.prototype.report = function (text, top, progress) {
    var scan = this.scan(text, progress);
    var ranked = this.rank(scan);
    var entries = this.data.entries, limits = this.limits;
    var results = ranked.findings.slice(0, top == null ? 5 : top).map(function (f) {
      var info = entries[f.entry] || [f.entry, "", "", ""];
      var byLine = new Map();
      f.matches.forEach(function (m) {
        m.lines.forEach(function (n) {
          var line = scan.hitLines.get(n);
          byLine.set(n + 1, { line: n + 1, rank: line ? line.rank : null, host: line ? line.host : null, text: line ? line.text : "" });
        });
      });
      var lines = Array.from(byLine.values()).sort(function (a, b) { return a.line - b.line; });
      var sigs = Array.from(new Set(f.matches.map(function (m) { return m.sig.index + 1; }))).sort(function (a, b) { return a - b; });
      return {
        entry: f.entry, title: info[0], summary: info[1], url: info[2], confidence: f.confidence, score: f.score,
        signatures: sigs, lines: lines.slice(0, limits.max_lines_shown),
        more_lines: Math.max(0, lines.length - limits.max_lines_shown), fix: info[3]
      };
    });
    return { lines_scanned: scan.linesScanned, results: results, first_failure: ranked.firstFailure,
             consequence_streams: ranked.consequenceStreams };
  };

  var api = { Matcher: Matcher, parseLine: parseLine, compileRules: compileRules, Automaton: Automaton };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.RootcauseMatcher = api;
})(typeof self !== "undefined" ? self : this);
