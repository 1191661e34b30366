// The in-browser twin of rootcause/matching/ (logline, events, signatures, scanner, incident,
// ranking): the same decoration and prefix rules, the same events, the same signature semantics,
// the same incident and report, on the data of search/signatures.json. The tests run both on the
// same logs and require identical reports. Works as a browser global (RootcauseMatcher), in a
// worker (importScripts) and in Node (require).
(function (root) {
  "use strict";

  // -- Aho-Corasick: which words occur in a text, in one pass ---------------------------------------
  // Built from the sorted words without a lookup table (a word shares its prefix with the one
  // before it), stored in typed arrays: the children of a node are a sorted run of (char, node)
  // pairs, the root's children a table indexed by char. `fail` is the usual failure link, `dict`
  // the nearest node on the failure chain where a word ends. Tens of thousands of anchors build in
  // well under a second and a line is read at a few nanoseconds a character.
  function Automaton(words) {
    var order = [];
    for (var w = 0; w < words.length; w++) if (words[w].length) order.push(w);
    order.sort(function (a, b) { return words[a] < words[b] ? -1 : words[a] > words[b] ? 1 : a - b; });
    var total = 1;
    for (var t = 0; t < order.length; t++) total += words[order[t]].length;
    var parent = new Int32Array(total), chars = new Uint16Array(total), depth = new Int32Array(total);
    var wordHead = new Int32Array(total).fill(-1), wordNext = new Int32Array(words.length).fill(-1);
    var path = [0], previous = "", count = 1;
    for (var o = 0; o < order.length; o++) {
      var id = order[o], word = words[id], common = 0, limit = Math.min(word.length, previous.length);
      while (common < limit && word.charCodeAt(common) === previous.charCodeAt(common)) common++;
      path.length = common + 1;
      var node = path[common];
      for (var k = common; k < word.length; k++) {
        var child = count++;
        parent[child] = node; chars[child] = word.charCodeAt(k); depth[child] = k + 1;
        path.push(child);
        node = child;
      }
      wordNext[id] = wordHead[node]; wordHead[node] = id;
      previous = word;
    }
    // children: nodes were made in sorted order, so each node's children come in order of char
    var start = new Int32Array(count + 1);
    for (var v = 1; v < count; v++) start[parent[v] + 1]++;
    for (var s = 0; s < count; s++) start[s + 1] += start[s];
    var fill = start.slice(0, count), childChar = new Uint16Array(Math.max(count - 1, 1)), childNode = new Int32Array(Math.max(count - 1, 1));
    var root = new Int32Array(65536);
    for (var c = 1; c < count; c++) {
      var at = fill[parent[c]]++;
      childChar[at] = chars[c]; childNode[at] = c;
      if (parent[c] === 0) root[chars[c]] = c;
    }
    this.start = start; this.childChar = childChar; this.childNode = childNode; this.root = root;
    // failure and dictionary links, breadth first (by depth)
    var fail = new Int32Array(count), dict = new Int32Array(count).fill(0), byDepth = new Int32Array(count);
    var maxDepth = 0;
    for (var d = 0; d < count; d++) if (depth[d] > maxDepth) maxDepth = depth[d];
    var firstOf = new Int32Array(maxDepth + 2);
    for (var e = 0; e < count; e++) firstOf[depth[e] + 1]++;
    for (var f = 0; f <= maxDepth; f++) firstOf[f + 1] += firstOf[f];
    for (var g = 0; g < count; g++) byDepth[firstOf[depth[g]]++] = g;
    this.fail = fail;
    for (var q = 0; q < count; q++) {
      var x = byDepth[q];
      if (depth[x] <= 1) { fail[x] = 0; dict[x] = 0; continue; }
      var back = fail[parent[x]], target = 0;
      for (;;) {
        target = this.child(back, chars[x]);
        if (target || back === 0) break;
        back = fail[back];
      }
      fail[x] = target;
      dict[x] = wordHead[target] >= 0 ? target : dict[target];
    }
    this.dict = dict; this.depth = depth.slice(0, count); this.wordHead = wordHead.slice(0, count);
    this.wordNext = wordNext;
    this.maxLength = maxDepth;
  }
  Automaton.prototype.child = function (node, ch) {
    if (node === 0) return this.root[ch];
    var low = this.start[node], high = this.start[node + 1], chars = this.childChar;
    if (high - low <= 8) {
      for (var k = low; k < high; k++) { var c = chars[k]; if (c === ch) return this.childNode[k]; if (c > ch) return 0; }
      return 0;
    }
    while (low < high) {
      var mid = (low + high) >> 1;
      if (chars[mid] < ch) low = mid + 1; else high = mid;
    }
    return low < this.start[node + 1] && chars[low] === ch ? this.childNode[low] : 0;
  };
  Automaton.prototype.step = function (node, ch) {
    for (;;) {
      var next = this.child(node, ch);
      if (next || node === 0) return next;
      node = this.fail[node];
    }
  };
  // The first node at or after `node` on the dictionary chain where a word ends (0: none).
  Automaton.prototype.ends = function (node) { return this.wordHead[node] >= 0 ? node : this.dict[node]; };
  // The ids of the words found in text (a Set), or null.
  Automaton.prototype.find = function (text) {
    var node = 0, found = null;
    for (var i = 0; i < text.length; i++) {
      node = this.step(node, text.charCodeAt(i));
      for (var u = this.ends(node); u; u = this.dict[u]) {
        if (!found) found = new Set();
        for (var id = this.wordHead[u]; id >= 0; id = this.wordNext[id]) found.add(id);
      }
    }
    return found;
  };

  // The automaton over a line's text with its white space folded as scanner.WRAP folds it (every
  // run of spaces and tabs reads as one space), without building the folded text. Positions are
  // in the folded text. Returns {first, state, head}: the smallest start of a word (or -1), the
  // state after the line without its trailing white space, and that folded length.
  Automaton.prototype.scanFolded = function (text) {
    var node = 0, first = -1, position = 0, blank = false, head = 0, headState = 0;
    for (var i = 0; i < text.length; i++) {
      var ch = text.charCodeAt(i);
      if (ch === 32 || ch === 9) {
        if (blank) continue;
        blank = true;
        head = position; headState = node;
        ch = 32;
      } else blank = false;
      node = this.step(node, ch);
      if (first < 0 || position - this.maxLength < first) {
        for (var u = this.ends(node); u; u = this.dict[u]) {
          var begin = position - this.depth[u] + 1;
          if (first < 0 || begin < first) first = begin;
        }
      }
      position++;
    }
    if (!blank) { head = position; headState = node; }
    return { first: first, state: headState, head: head };
  };

  // A word that starts in a line (whose scan is `line`) and continues on the next one, joined by
  // one space (a message wrapped at a space): its smallest start, or -1. As scanning the joined
  // text (head + " " + the next line without its leading white space, folded) for words ending
  // after the space, but only as far as a word begun in the line can reach.
  Automaton.prototype.crossing = function (line, next) {
    var node = line.state;
    if (!this.depth[node]) return -1;
    var best = -1, position = line.head, blank = true, i = 0;
    node = this.step(node, 32);
    position++;
    while (i < next.length && (next.charCodeAt(i) === 32 || next.charCodeAt(i) === 9)) i++;
    for (; i < next.length; i++) {
      var ch = next.charCodeAt(i);
      if (ch === 32 || ch === 9) { if (blank) continue; blank = true; ch = 32; } else blank = false;
      node = this.step(node, ch);
      // a word that began in the line must still be in the state
      if (position - this.depth[node] + 1 >= line.head) break;
      for (var u = this.ends(node); u; u = this.dict[u]) {
        var begin = position - this.depth[u] + 1;
        if (begin < line.head && (best < 0 || begin < best)) best = begin;
      }
      position++;
    }
    return best;
  };

  // A word begun in a line (whose scan is `line`) that ends with a blank, read at the line's end:
  // its smallest start, or -1. scanner.WRAP reads the line break as that blank, so the prefilter
  // finds it there (the line and the next are its candidate when the next begins with a blank,
  // which the same run of white space takes in).
  Automaton.prototype.endsAtBreak = function (line) {
    var node = this.step(line.state, 32), best = -1;
    for (var u = this.ends(node); u; u = this.dict[u]) {
      var begin = line.head - this.depth[u] + 1;
      if (begin < line.head && (best < 0 || begin < best)) best = begin;
    }
    return best;
  };

  // Whether any word occurs in the text with its white space folded.
  Automaton.prototype.inFolded = function (text) { return this.scanFolded(text).first >= 0; };

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

  // rootcause.text.undecorate: ANSI, carriage returns, an issue's "> " quote, a rich box frame.
  // text.DECORATION_NEEDS, from signatures.json (`declare`)
  var NEEDS = [];
  function compileDecoration(rules) {
    return (rules || []).map(function (r) { return [new RegExp(r[1], "g"), r[2]]; });
  }
  function undecorate(line, decoration) {
    for (var i = 0; i < decoration.length; i++) {
      var marks = NEEDS[i] || [""], needed = false;
      for (var m = 0; m < marks.length; m++) if (line.indexOf(marks[m]) >= 0) { needed = true; break; }
      if (needed) line = line.replace(decoration[i][0], decoration[i][1]);
    }
    return trimEnd(line, " \t\f\v");
  }

  // The text without the given characters at its end (or, with `both`, at its start too). Written
  // out: a RegExp such as /[ \t]+$/ retries from every blank of a long run, quadratic in its length.
  function trimEnd(text, chars, both) {
    var start = 0, end = text.length;
    while (end > 0 && chars.indexOf(text.charAt(end - 1)) >= 0) end--;
    while (both && start < end && chars.indexOf(text.charAt(start)) >= 0) start++;
    return start === 0 && end === text.length ? text : text.slice(start, end);
  }

  function parseLine(raw, rules, limits, decoration) {
    var text = undecorate(cut(raw, limits.max_line), decoration || []);
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
        else if (kind === "time" && time === null) time = trimEnd(m.length > 1 && m[1] !== undefined ? m[1] : m[0], " \t[]:", true);
        text = text.slice(m[0].length);
        applied = true;
        break;
      }
      if (!applied) break;
    }
    return makeLine(text, rank, host, time);
  }

  function makeLine(text, rank, host, time) {
    var stream = rank === null && host === null ? "" : (host || "") + "#" + (rank === null ? "" : rank);
    return { text: text, rank: rank, host: host, time: time, stream: stream };
  }

  // scanner.join_lines: a wrapped message's physical lines as one line.
  function joinLines(physical, rules, limits, decoration, strict) {
    var first = parseLine(physical[0], rules, limits, decoration);
    if (physical.length === 1) return first;
    var texts = [first.text];
    for (var i = 1; i < physical.length; i++) {
      var more = parseLine(physical[i], rules, limits, decoration);
      if (strict ? more.stream !== first.stream : (more.stream && first.stream && more.stream !== first.stream)) break;
      texts.push(more.text.trim());
    }
    return makeLine(cut(texts.filter(Boolean).join(" "), limits.max_line), first.rank, first.host, first.time);
  }

  // -- events (rootcause/matching/events.py) ----------------------------------------------------
  function recognise(text, events) {
    for (var i = 0; i < events.length; i++) {
      var m = events[i][1].exec(text);
      if (m) return [events[i][0], m.slice(1).map(function (g) { return g === undefined ? "" : g; })];
    }
    return null;
  }

  function timeKey(stamp) {
    if (!stamp) return null;
    for (var i = 0; i < TIME_RULES.length; i++) {
      var m = TIME_RULES[i].exec(stamp);
      if (m) {
        var month = parseInt(m[1], 10), day = parseInt(m[2], 10);
        if (month < 1 || month > 12) return null;
        var seconds = ((DAYS_BEFORE[month - 1] + day - 1) * 24 + parseInt(m[3], 10)) * 3600 + parseInt(m[4], 10) * 60 + parseInt(m[5], 10);
        return seconds + (m[6] ? parseInt(m[6], 10) / Math.pow(10, m[6].length) : 0);
      }
    }
    return null;
  }

  // -- the log model (rootcause/matching/incident.py: LogModel) ---------------------------------
  // The rules rootcause/matching/shared.json declares once, from signatures.json's "shared": set by
  // `declare` when a Matcher is made (a site's matcher and its signatures come from one build).
  var shared = null, TIME_RULES = [], DAYS_BEFORE = [], MAX_FAILURES, MAX_LAUNCHER_RECORDS, MAX_STREAMS, MESSAGE_LINES,
    MAX_TEXT, TIME_BEFORE_TRACEBACK, INCOMPLETE_TRACEBACK, CONSEQUENCE_HINTS, STOPPED_BY_LAUNCHER, STOP_SIGNALS,
    CONFIDENCE_WORDS, CONSEQUENCE_WORDS, CPP_ERROR_FRAMES, WAITING_HINTS;
  function declare(data) {
    shared = data.shared;
    var limits = shared.limits;
    NEEDS = data.decoration_needs;
    TIME_RULES = shared.time_rules.map(function (rule) { return new RegExp(rule[1]); });
    DAYS_BEFORE = shared.days_before;
    MAX_FAILURES = limits.max_failures; MAX_LAUNCHER_RECORDS = limits.max_launcher_records;
    MAX_STREAMS = limits.max_streams; MESSAGE_LINES = limits.message_lines; MAX_TEXT = limits.max_text;
    TIME_BEFORE_TRACEBACK = limits.time_before_traceback;
    INCOMPLETE_TRACEBACK = shared.incomplete_traceback;
    CONSEQUENCE_HINTS = new RegExp(shared.consequence_hints);
    WAITING_HINTS = new RegExp(shared.waiting_hints);
    STOPPED_BY_LAUNCHER = new Set(shared.stopped_by_launcher);
    STOP_SIGNALS = new Set(shared.stop_signals);
    CONFIDENCE_WORDS = shared.confidence_words;
    CONSEQUENCE_WORDS = shared.consequence_words;
    CPP_ERROR_FRAMES = new RegExp(shared.cpp_error_frames);
  }
  function raisedWithoutMessage(where, file) {
    return shared.raised_without_message.replace("{0}", function () { return where; })
      .replace("{1}", function () { return file; });
  }

  function cutText(text) {
    var points = Array.from(text);
    return points.length <= MAX_TEXT ? text : points.slice(0, MAX_TEXT - 1).join("") + "\u2026";
  }
  function fits(a, b) { return !a || !b || a === b; }
  function ints(text) { return (text.match(/[0-9]+/g) || []).map(function (x) { return parseInt(x, 10); }); }

  function LogModel() {
    this.streams = new Map(); this.failures = []; this.failuresDropped = 0; this.launcher = [];
    this.watchdog = new Map(); this.lagging = new Set(); this.ranksSeen = new Set(); this.completed = new Map();
    this.lastPhase = null;
    this.rootNext = false; this.record = null; this.pendingCpp = null; this.raised = null; this.groups = 0;
    this.lastCpp = null; this.cppTraces = [];
    this.said = new Map(); this.saidLast = -1; this.messageEvents = new Set(); this.backtraceGap = 3;
    this.collectives = new Map(); this.launcherStarted = false; this.fingerprint = null; this.finished = false;
  }
  LogModel.prototype.stream = function (line) {
    var state = this.streams.get(line.stream);
    if (!state) {
      state = { rank: line.rank, host: line.host, tracebackOpen: false, tracebackStart: 0, lastFrame: null, frame: null,
                lastLine: 0, lastTime: null, chained: false, group: 0, trace: null };
      if (this.streams.size < MAX_STREAMS) this.streams.set(line.stream, state);
    }
    return state;
  };
  LogModel.prototype.add = function (failure) {
    if (this.failures.length < MAX_FAILURES) this.failures.push(failure); else this.failuresDropped++;
    return failure;
  };
  LogModel.prototype.failure = function (number, line, kind, text) {
    return { line: number, stream: line.stream, rank: line.rank, host: line.host, time: line.time, kind: kind,
             text: cutText(text), location: null, frame: null, start: number, group: 0, end: number, explainedBy: null,
             consequence: false, cppFrames: [] };
  };
  // incident.LogModel._cpp: a C++ exception; the backtrace printed just before it is its own
  LogModel.prototype.cpp = function (number, line, state, text) {
    var failure = this.add(this.failure(number, line, "cpp", text));
    var trace = state.trace;
    if (trace && !trace.failure && number - trace.end > 0 && number - trace.end <= this.backtraceGap) {
      trace.failure = failure; failure.cppFrames = trace.frames; failure.start = trace.start;
    }
    this.lastCpp = failure;
    return failure;
  };
  // incident.LogModel._trace: a line of a C++ backtrace (c10's header: frameNo null; or `frame #N:`)
  LogModel.prototype.trace = function (number, line, state, frameNo, candidate, raised) {
    var trace = state.trace, gap = this.backtraceGap;
    if (!trace || number - trace.end > gap || frameNo === null || (frameNo === 0 && trace.framed)) {
      trace = state.trace = { start: number, end: number, framed: false, looking: true, frames: [], failure: null };
      if (this.cppTraces.length < MAX_FAILURES) this.cppTraces.push(trace.frames);
      var last = this.lastCpp;
      if (!last || !fits(last.stream, line.stream) || last.cppFrames.length || !(number - last.end > 0 && number - last.end <= gap)) {
        last = raised || null;
      }
      if (last) { trace.failure = last; last.cppFrames = trace.frames; }
    }
    trace.end = number;
    if (frameNo === null) trace.frames.push(candidate);
    else {
      trace.framed = true;
      if (trace.looking && !CPP_ERROR_FRAMES.test(candidate[2])) {
        trace.looking = false;
        if (candidate[2] !== "<unknown function>") trace.frames.push(candidate);
      }
    }
    if (trace.failure) trace.failure.end = Math.max(trace.failure.end, number);
  };
  LogModel.prototype.saturated = function () { return this.failures.length >= MAX_FAILURES; };
  LogModel.prototype.feed = function (number, line, kind, groups) {
    if (this.exceptionKinds && this.exceptionKinds.has(kind) && this.saturated()) return;
    if (line.rank !== null) this.ranksSeen.add(line.rank);
    var state = this.stream(line);
    if (line.time) state.lastTime = [line.time, number];
    if (this.messageEvents.has(kind)) { this.said.set(line.stream, number); this.saidLast = number; }
    if (kind === "traceback") {
      if (!state.chained) { this.groups++; state.group = this.groups; }
      state.tracebackOpen = true; state.tracebackStart = number; state.lastFrame = null; state.chained = false;
      state.frame = null;
      state.lastLine = number;
    } else if (kind === "frame") {
      if (!state.tracebackOpen) {
        if (!state.chained) { this.groups++; state.group = this.groups; }
        state.tracebackOpen = true; state.tracebackStart = number; state.chained = false;
      }
      state.lastFrame = 'File "' + groups[0] + '", line ' + groups[1] + ", in " + groups[2];
      state.frame = [number, groups[0], groups[2], false];
      state.lastLine = number;
    } else if (kind === "chain") {
      state.chained = true;
    } else if (kind === "raise") {
      var frame = state.frame;
      if (state.tracebackOpen && frame && number - frame[0] > 0 && number - frame[0] <= 2) state.frame = [frame[0], frame[1], frame[2], true];
    } else if (kind === "exception") {
      this.exception(number, line, state, groups);
      var fp = this.fingerprint ? this.fingerprint.exec(line.text) : null;
      if (fp) {
        var pairs = [[parseInt(fp[1], 10), fp[2]], [parseInt(fp[3], 10), fp[4]]];
        for (var q = 0; q < pairs.length; q++) {
          if (this.collectives.size < MAX_STREAMS && !this.collectives.has(pairs[q][0])) this.collectives.set(pairs[q][0], pairs[q][1]);
        }
      }
    } else if (kind === "cpp-throw") {
      this.pendingCpp = this.cpp(number, line, state, "terminate called after throwing an instance of '" + groups[0]);
    } else if (kind === "cpp-terminate") {
      this.cpp(number, line, state, "terminate called without an active exception");
    } else if (kind === "cpp-what") {
      var pending = this.pendingCpp;
      if (pending && number - pending.end <= 4 && fits(pending.stream, line.stream)) {
        pending.text = cutText(pending.text + ": " + groups[0].trim());
        pending.end = number;
        this.pendingCpp = null;
      }
    } else if (kind === "cpp-raised") {
      // incident.LogModel.feed: a backtrace right below a message is that message's
      // an unprefixed backtrace may follow any process's message
      var said = line.stream ? this.said.get(line.stream) : (this.saidLast >= 0 ? this.saidLast : undefined);
      var raised = null;
      if (!this.raised && (said === undefined || number - said > this.backtraceGap)) {
        raised = this.raised = this.failure(number, line, "cpp", raisedWithoutMessage(groups[0], groups[1]));
      }
      var at = groups[1].lastIndexOf(":");
      this.trace(number, line, state, null, [number, groups[1].slice(0, at), groups[0], cutText(line.text.trim())], raised);
    } else if (kind === "cpp-frame") {
      this.trace(number, line, state, parseInt(groups[0], 10), [number, "", groups[1], cutText(line.text.trim())], null);
    } else if (kind === "fatal") {
      // incident.LogModel.feed: the line as printed (Python's fatal error, a shell's signal report, glibc's abort)
      this.add(this.failure(number, line, "fatal", Array.from(line.text.trim()).slice(0, 300).join("")));
    } else if (kind === "signal") {
      var sig = this.failure(number, line, "signal", "Signal " + groups[0] + " (" + groups[1] + ") received by PID " + groups[2]);
      var record = this.record;
      if (record && number - record.line <= 8) {
        record.message = cutText(line.text.trim());
        if (!line.stream && record.rank !== null) {
          sig.rank = record.rank; sig.host = record.host; sig.stream = "#" + record.rank;
          sig.time = sig.time || record.time;
        }
      }
      sig.consequence = STOP_SIGNALS.has(groups[1]);
      this.add(sig);
    } else if (kind === "agent-exit" || kind === "launcher-exit" || kind === "srun-exit") {
      this.launcherLine(number, line, kind, groups);
    } else if (kind === "launcher-start") {
      this.launcherStarted = true;
    } else if (kind === "report-root") {
      this.rootNext = true;
    } else if (kind === "report-field") {
      this.reportField(number, groups);
    } else if (kind === "watchdog") {
      if (!this.watchdog.has(line.stream)) this.watchdog.set(line.stream, { seq: parseInt(groups[0], 10), op: groups[1], line: number });
    } else if (kind.indexOf("phase:") === 0) {
      this.lastPhase = [kind.slice(6), number];
    } else if (kind === "progress") {
      if (line.rank !== null && this.completed.size < MAX_STREAMS && !this.completed.has(line.rank)) {
        this.completed.set(line.rank, parseInt(groups[2], 10));
      }
    } else if (kind === "lagging") {
      var self = this;
      ints(groups[0]).slice(0, MAX_STREAMS).forEach(function (r) { self.lagging.add(r); });
    }
  };
  LogModel.prototype.exception = function (number, line, state, groups) {
    var name = groups[0], message = groups[1].trim();
    if (!(state.tracebackOpen || state.chained) && line.text.indexOf(":") < 0) return;
    if (!state.tracebackOpen && !state.chained) { this.groups++; state.group = this.groups; }
    var failure = this.failure(number, line, "exception", message ? name + ": " + message : name);
    failure.location = state.lastFrame; failure.frame = state.frame;
    failure.start = state.tracebackOpen ? state.tracebackStart : number;
    if (failure.time === null && state.lastTime && line.stream &&
        failure.start - state.lastTime[1] >= 0 && failure.start - state.lastTime[1] <= TIME_BEFORE_TRACEBACK) {
      failure.time = state.lastTime[0];
    }
    failure.group = state.group;
    failure.end = number;
    this.failures.forEach(function (other) { if (other.group === failure.group && other.stream === failure.stream) other.end = number; });
    this.add(failure);
    state.tracebackOpen = false; state.lastFrame = null; state.chained = false; state.frame = null;
  };
  LogModel.prototype.launcherLine = function (number, line, kind, groups) {
    if (this.launcher.length >= MAX_LAUNCHER_RECORDS) return;
    var record;
    if (kind === "agent-exit") record = launcherRecord(number, "torchrun-agent", { exitcode: parseInt(groups[0], 10), local_rank: parseInt(groups[1], 10), host: line.host, time: line.time });
    else if (kind === "launcher-exit") record = launcherRecord(number, "deepspeed", { exitcode: parseInt(groups[0], 10), host: line.host, time: line.time });
    else {
      var tasks = ints(groups[1]);
      var code = /exit code (-?[0-9]+)/.exec(groups[2]);
      record = launcherRecord(number, "srun", { rank: tasks.length ? tasks[0] : null, host: groups[0], exitcode: code ? parseInt(code[1], 10) : null, message: cutText(groups[2]) });
    }
    this.launcher.push(record);
  };
  function launcherRecord(line, source, fields) {
    var r = { line: line, source: source, rank: null, local_rank: null, host: null, exitcode: null, time: null, root: false, message: "" };
    Object.keys(fields).forEach(function (k) { r[k] = fields[k] === undefined ? null : fields[k]; });
    return r;
  }
  LogModel.prototype.reportField = function (number, groups) {
    var name = groups[0], value = groups[1].trim();
    if (name === "time") {
      if (this.launcher.length >= MAX_LAUNCHER_RECORDS) { this.record = null; return; }
      this.record = launcherRecord(number, "torchrun-report", { time: value, root: this.rootNext });
      this.rootNext = false;
      this.launcher.push(this.record);
      return;
    }
    var record = this.record;
    if (!record || number - record.line > 8) return;
    if (name === "host") record.host = value;
    else if (name === "rank") {
      var found = /^(-?[0-9]+) \(local_rank: (-?[0-9]+)\)/.exec(value);
      if (found) { record.rank = parseInt(found[1], 10); record.local_rank = parseInt(found[2], 10); }
    } else if (name === "exitcode") {
      var code = /^-?[0-9]+/.exec(value);
      if (code) record.exitcode = parseInt(code[0], 10);
    } else if (name === "traceback" && !record.message) record.message = cutText(value);
  };
  LogModel.prototype.finish = function () {
    if (this.finished) return;
    this.finished = true;
    var self = this;
    this.streams.forEach(function (state, stream) {
      if (state.tracebackOpen) {
        var failure = { line: state.tracebackStart, stream: stream, rank: state.rank, host: state.host, time: null, kind: "exception",
                        text: INCOMPLETE_TRACEBACK, location: state.lastFrame, frame: state.frame, start: state.tracebackStart,
                        group: state.group, end: Math.max(state.lastLine, state.tracebackStart), explainedBy: null,
                        consequence: false };
        self.add(failure);
        state.tracebackOpen = false;
      }
    });
    if (!this.failures.length && this.raised) this.add(this.raised);
    // incident.LogModel.finish: on one node, torchrun's agent's local rank is the rank
    if (this.oneNode()) {
      this.launcher.forEach(function (r) { if (r.source === "torchrun-agent" && r.rank === null) r.rank = r.local_rank; });
    }
  };
  LogModel.prototype.reportLines = function () {
    return new Set(this.launcher.map(function (r) { return r.line; }));
  };
  LogModel.prototype.oneNode = function () {
    var hosts = new Set();
    this.streams.forEach(function (state) { if (state.host) hosts.add(state.host); });
    this.launcher.forEach(function (r) { if (r.host) hosts.add(r.host); });
    return hosts.size <= 1 && this.launcher.every(function (r) {
      return r.source !== "torchrun-report" || r.rank === null || r.rank === r.local_rank;
    });
  };

  // -- the incident (incident.build_incident) -----------------------------------------------------
  // incident.covers: a line of the failure's traceback, or below its exception line one that may
  // still be its message (a launcher's report of an exit never is)
  function covers(failure, lines, reports) {
    var end = failure.end + MESSAGE_LINES;
    return lines.some(function (n) { return failure.start <= n && n <= end && (n <= failure.end || !reports.has(n)); });
  }
  // incident._just_before: the closest match before a cut-short traceback, not of a warning
  function justBefore(failure, byStream, warningEntries) {
    var best = null, bestLine = failure.start - MESSAGE_LINES - 1;
    byStream.forEach(function (found, stream) {
      if (!fits(stream, failure.stream)) return;
      found.forEach(function (m) {
        if (warningEntries.has(m.sig.entry)) return;
        var line = null;
        m.lines.forEach(function (n) { if (n < failure.start && (line === null || n > line)) line = n; });
        if (line !== null && line > bestLine) { best = m; bestLine = line; }
      });
    });
    return best;
  }

  function explain(model, matches, consequenceEntries, warningEntries) {
    var byStream = new Map();
    matches.forEach(function (m) { if (!byStream.has(m.stream)) byStream.set(m.stream, []); byStream.get(m.stream).push(m); });
    var reports = model.reportLines();
    model.failures.forEach(function (failure) {
      var best = null;
      byStream.forEach(function (found, stream) {
        if (!fits(stream, failure.stream)) return;
        found.forEach(function (m) {
          if (covers(failure, m.lines, reports)) best = best || m;
        });
      });
      if (!best && failure.text === INCOMPLETE_TRACEBACK) best = justBefore(failure, byStream, warningEntries);
      if (best) failure.explainedBy = best.sig.entry;
      else if (failure.kind !== "signal" && CONSEQUENCE_HINTS.test(failure.text)) failure.consequence = true;
    });
    var waited = new Map();
    function wait(stream, line) { waited.set(stream, waited.has(stream) ? Math.min(waited.get(stream), line) : line); }
    model.failures.forEach(function (f) { if (f.stream && (f.consequence || consequenceEntries.has(f.explainedBy))) wait(f.stream, f.line); });
    matches.forEach(function (m) { if (m.stream && consequenceEntries.has(m.sig.entry)) wait(m.stream, m.lines[0]); });
    model.failures.forEach(function (f) {
      if (waited.has(f.stream) && f.line > waited.get(f.stream) && !f.explainedBy && f.kind !== "signal") f.consequence = true;
    });
  }

  function byLine(a, b) { return a.line - b.line; }

  function unknownCauses(model) {
    var seenGroups = new Set(), named = new Set(), kept = new Map();
    model.failures.forEach(function (f) { if (f.stream) named.add(f.kind + "\u0000" + f.text); });
    model.failures.slice().sort(byLine).forEach(function (failure) {
      var groupKey = failure.stream + "\u0000" + failure.group;
      var groupExplained = failure.group && model.failures.some(function (f) { return f.group === failure.group && f.stream === failure.stream && f.explainedBy; });
      if (failure.explainedBy || failure.consequence || groupExplained) return;
      if (failure.group && seenGroups.has(groupKey)) return;
      seenGroups.add(groupKey);
      if (!failure.stream && named.has(failure.kind + "\u0000" + failure.text)) return;
      var key = failure.stream + "\u0000" + failure.kind + "\u0000" + failure.text;
      if (!kept.has(key)) kept.set(key, failure);
      else if (kept.get(key).time === null && failure.time) kept.get(key).time = failure.time;
    });
    return Array.from(kept.values()).sort(byLine);
  }

  function persisted(finding, persistent) {
    var lines = finding.matchLines.slice().sort(function (a, b) { return a - b; }), low = 0;
    for (var high = 0; high < lines.length; high++) {
      while (lines[high] - lines[low] >= persistent.within) low++;
      if (high - low + 1 >= persistent.count) return true;
    }
    return false;
  }

  function causeEvents(finding, hitLines) {
    var best = new Map();
    finding.matches.forEach(function (m) {
      m.lines.forEach(function (number) {
        var line = hitLines.get(number) || makeLine("", null, null, null);
        var stream = m.stream || line.stream;
        var named = line.rank !== null || line.host ? 0 : 1;
        var b = best.get(stream);
        if (!b || named < b[0] || (named === b[0] && number < b[1])) best.set(stream, [named, number, line]);
      });
    });
    var out = [];
    best.forEach(function (b, stream) {
      var line = b[2];
      out.push({ line: b[1], stream: stream, rank: line.rank, host: line.host, time: line.time, entry: finding.entry, text: line.text });
    });
    return out;
  }

  function unknownEvent(failure) {
    return { line: failure.line, stream: failure.stream, rank: failure.rank, host: failure.host, time: failure.time, entry: null, text: failure.text, location: failure.location };
  }

  function launcherClaim(model) {
    // incident._launcher_claim: of several nodes' Root Cause records, the earliest
    var roots = model.launcher.filter(function (r) { return r.source === "torchrun-report" && r.root && r.exitcode !== null && r.exitcode !== 0; });
    if (roots.length) {
      var times = roots.map(function (r) { return timeKey(r.time); });
      if (roots.length > 1 && times.every(function (t) { return t !== null; })) {
        var best = 0;
        for (var k = 1; k < roots.length; k++) if (times[k] < times[best]) best = k;
        return roots[best];
      }
      return roots[0];
    }
    for (var j = 0; j < model.launcher.length; j++) {
      var r = model.launcher[j];
      if (r.exitcode !== null && r.exitcode !== 0 && !STOPPED_BY_LAUNCHER.has(r.exitcode)) return r;
    }
    return null;
  }

  function reportTimes(model, raw) {
    var times = new Map();
    model.launcher.forEach(function (r) {
      if (r.source === "torchrun-report" && r.rank !== null && r.time && !STOPPED_BY_LAUNCHER.has(r.exitcode) && !times.has(r.rank)) {
        times.set(r.rank, raw ? r.time : timeKey(r.time));
      }
    });
    return times;
  }

  function oddCollective(model) {
    if (model.collectives.size < 3) return null;
    var counts = new Map();
    Array.from(model.collectives.keys()).sort(function (a, b) { return a - b; }).forEach(function (rank) {
      var c = model.collectives.get(rank);
      if (!counts.has(c)) counts.set(c, []);
      counts.get(c).push(rank);
    });
    if (counts.size !== 2) return null;
    var kv = Array.from(counts.entries()).sort(function (x, y) { return x[1].length - y[1].length || (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0); });
    return kv[0][1].length === 1 && kv[1][1].length > 1 ? [kv[0][1][0], kv[0][0], kv[1][0]] : null;
  }

  function minBy(items, key) {
    var best = null, bestKey = null;
    items.forEach(function (item) {
      var k = key(item);
      if (best === null || k[0] < bestKey[0] || (k[0] === bestKey[0] && k[1] < bestKey[1])) { best = item; bestKey = k; }
    });
    return best;
  }

  function firstFailure(events, model) {
    if (!events.length) return null;
    var named = events.filter(function (e) { return e.stream; });
    var pool = named.length ? named : events;
    var evidence = [], perStream = new Map();
    pool.slice().sort(byLine).forEach(function (e) { if (!perStream.has(e.stream)) perStream.set(e.stream, e); });
    var candidates = Array.from(perStream.values());
    var claim = launcherClaim(model), chosen;
    var odd = oddCollective(model);
    if (candidates.length > 1 && odd && candidates.some(function (e) { return e.rank === odd[0]; })) {
      chosen = candidates.filter(function (e) { return e.rank === odd[0]; })[0];
      evidence.push("its collective (" + odd[1] + ") differs from the one every other rank ran (" + odd[2] + ")");
    } else if (candidates.length > 1) {
      var timed = candidates.map(function (e) { return [timeKey(e.time), e]; });
      if (timed.every(function (p) { return p[0] !== null; })) {
        chosen = minBy(timed, function (p) { return [p[0], p[1].line]; })[1];
        evidence.push("its own timestamp (" + chosen.time + ") is the earliest among the failing processes");
      } else {
        var rt = reportTimes(model, false);
        var keyed = candidates.map(function (e) { return [rt.has(e.rank) ? rt.get(e.rank) : null, e]; });
        var distinct = new Set(keyed.map(function (p) { return p[0]; }));
        if (keyed.every(function (p) { return p[0] !== null && p[0] !== undefined; }) && distinct.size > 1) {
          chosen = minBy(keyed, function (p) { return [p[0], p[1].line]; })[1];
          evidence.push("the launcher recorded its failure first");
        } else {
          chosen = minBy(candidates, function (e) { return [e.line, 0]; });
          evidence.push("it printed its error first");
        }
      }
    } else chosen = candidates[0];
    chosen = Object.assign({}, chosen);
    var others = Array.from(new Set(candidates.filter(function (e) { return e.stream !== chosen.stream; }).map(function (e) { return e.stream; })));
    if (others.length) evidence.push(others.length + " other process(es) also failed with a cause of their own");
    if (chosen.rank === null && !chosen.host && claim && claim.rank !== null) {
      chosen.rank = claim.rank;
      chosen.host = chosen.host || claim.host;
      evidence.push("the launcher's report names rank " + claim.rank + " as the root cause");
    } else if (claim && claim.rank !== null && chosen.rank !== null) {
      if (claim.rank === chosen.rank) evidence.push("the launcher's report agrees");
      else evidence.push("the launcher's report names rank " + claim.rank + " instead, but its time is when the launcher noticed the exit, not when the error happened");
    }
    if (chosen.time === null && chosen.rank !== null) {
      var raw = reportTimes(model, true);
      chosen.time = raw.has(chosen.rank) ? raw.get(chosen.rank) : null;
    }
    chosen.evidence = evidence;
    chosen.line += 1;
    return chosen;
  }

  function silentSuspect(model, consequenceRanks) {
    if (model.lagging.size) {
      var lag = Array.from(model.lagging).sort(function (a, b) { return a - b; });
      return [lag[0], ["the desync report names rank(s) " + lag.join(", ") + " as lagging"]];
    }
    // incident._silent_suspect: the one rank whose last completed NCCL work is the lowest fell behind
    if (model.completed.size > 1) {
      var works = Array.from(model.completed.values());
      var low = Math.min.apply(null, works), high = Math.max.apply(null, works);
      var behind = [];
      model.completed.forEach(function (w, r) { if (w === low) behind.push(r); });
      if (behind.length === 1) {
        return [behind[0], ["rank " + behind[0] + "'s last completed NCCL work is " + low + ", the other ranks' up to " +
                            high + ": it fell behind the others"]];
      }
    }
    var found = ranksWaiting(model, consequenceRanks), waiting = found[0], known = found[1];
    var silent = Array.from(known).filter(function (r) { return !waiting.has(r); }).sort(function (a, b) { return a - b; });
    if (!waiting.size || !silent.length || silent.length === known.size) return [null, []];
    var stopped = new Set();
    model.launcher.forEach(function (r) { if (STOPPED_BY_LAUNCHER.has(r.exitcode)) stopped.add(r.rank); });
    var suspects = silent.filter(function (r) { return !stopped.has(r); });
    if (!suspects.length) suspects = silent;
    var ranks = Array.from(waiting).sort(function (a, b) { return a - b; }).join(", ");
    return [suspects[0], ["rank(s) " + ranks + " show only consequences (peer errors, timeouts) while rank " + suspects[0] +
                          " shows none: the others were waiting for it"]];
  }

  // incident._ranks_waiting: [the ranks that show a consequence, every rank the log shows]
  function ranksWaiting(model, consequenceRanks) {
    var waiting = new Set();
    model.watchdog.forEach(function (_v, s) { if (model.streams.has(s)) waiting.add(model.streams.get(s).rank); });
    consequenceRanks.forEach(function (r) { waiting.add(r); });
    model.failures.forEach(function (f) { if (f.consequence && f.kind !== "signal" && f.rank !== null) waiting.add(f.rank); });
    var known = new Set(model.ranksSeen);
    model.launcher.forEach(function (r) { if (r.rank !== null) known.add(r.rank); });
    waiting.delete(null);
    return [waiting, known];
  }

  // incident._absent_rank: every rank shown waits, and exactly one rank the job's numbering implies is never shown
  function absentRank(model, consequenceRanks) {
    var found = ranksWaiting(model, consequenceRanks), waiting = found[0], known = found[1];
    if (!waiting.size || Array.from(known).some(function (r) { return !waiting.has(r); })) return [null, []];
    var missing = missingRank(known, worldSize(model));
    if (missing === null) return [null, []];
    return [missing, ["ranks " + Array.from(known).sort(function (a, b) { return a - b; }).join(", ") +
                      " show only consequences (peer errors, timeouts), and rank " + missing + ", which the job's numbering " +
                      "says exists, appears nowhere in the log: it left early (exited 0, or without an error) while the " +
                      "others waited for it"]];
  }

  // incident._odd_wait: every rank failed waiting on its peers; the one that waited in another function than all the
  // others; [rank, why, its own error when raised in another file than the one all the others wait in]
  function oddWait(model, consequenceEntries) {
    var where = new Map();
    model.failures.forEach(function (f) {
      if (f.rank === null || where.has(f.rank) || !f.location || !(f.consequence || consequenceEntries.has(f.explainedBy)) ||
          !WAITING_HINTS.test(f.text)) return;
      where.set(f.rank, f);
    });
    if (where.size < 3) return [null, [], null];
    var groups = new Map();
    Array.from(where.keys()).sort(function (a, b) { return a - b; }).forEach(function (rank) {
      var loc = where.get(rank).location, at = loc.lastIndexOf(", in ");
      var fn = at < 0 ? loc : loc.slice(at + 5);
      if (!groups.has(fn)) groups.set(fn, []);
      groups.get(fn).push(rank);
    });
    if (groups.size !== 2) return [null, [], null];
    var kv = Array.from(groups.entries()).sort(function (x, y) {
      return x[1].length - y[1].length || (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0);
    });
    var ranks = kv[0][1], others = kv[1][1];
    if (ranks.length !== 1 || others.length < 2) return [null, [], null];
    var rank = ranks[0], mine = where.get(rank), files = new Set();
    others.forEach(function (r) { var f = where.get(r); files.add(f.frame ? f.frame[1] : ""); });
    if (files.size === 1 && !files.has("") && mine.frame && !files.has(mine.frame[1]) && !mine.explainedBy) {
      return [rank, ["ranks " + others.join(", ") + " failed waiting on their peers in " + kv[1][0] + " (" +
                     Array.from(files)[0] + "); rank " + rank + "'s error is raised in " + kv[0][0] + " (" + mine.frame[1] +
                     "), outside the collectives: its own error, whose words only sound like a peer's"], mine];
    }
    return [rank, ["every rank failed waiting on its peers: rank " + rank + " in " + kv[0][0] + ", ranks " + others.join(", ") +
                   " in " + kv[1][0] + ": rank " + rank + " went elsewhere (a collective the others did not call, or " +
                   "a loop it left before them)"], null];
  }

  // incident._left_early: torchrun's report of the rank's node is in the log and does not list it (it exited 0 first)
  function leftEarly(model, rank) {
    var reports = model.launcher.filter(function (r) { return r.source === "torchrun-report" && r.rank !== null && r.local_rank !== null; });
    if (!reports.length || reports.some(function (r) { return r.rank === rank; })) return false;
    var perNode = Math.max.apply(null, reports.map(function (r) { return r.local_rank; })) + 1;
    return reports.some(function (r) { return r.rank - r.local_rank === rank - rank % perNode; });
  }

  // incident._missing_rank: the one rank a job's numbering (0 .. world size - 1) says exists and the log does not show
  function missingRank(known, size) {
    var ranks = Array.from(known).filter(function (r) { return r >= 0; }).sort(function (a, b) { return a - b; });
    if (!ranks.length) return null;
    var world = Math.max(ranks[ranks.length - 1] + 1, size);
    if (world - ranks.length !== 1) return null;
    for (var r = 0; r < ranks.length; r++) if (ranks[r] !== r) return r;
    return ranks.length;
  }

  // incident._world_size: the hosts torchrun's reports name, times the highest local rank + 1
  function worldSize(model) {
    var hosts = new Set(), perNode = 0;
    model.launcher.forEach(function (r) {
      if (r.source === "torchrun-report" && r.host && r.local_rank !== null && r.rank !== null) {
        hosts.add(r.host);
        perNode = Math.max(perNode, r.local_rank + 1);
      }
    });
    return hosts.size * perNode;
  }

  function consequenceOnlyFirst(model, consequences, consequenceRanks) {
    var evidence = ["the log shows only consequences of a failure; the failing process's own error is not in it"];
    var found = silentSuspect(model, consequenceRanks), rank = found[0], reasons = found[1];
    var absent = rank === null ? absentRank(model, consequenceRanks) : [null, []];
    var left = absent[0] !== null && leftEarly(model, absent[0]);
    if (left) {
      rank = absent[0];
      reasons = absent[1].concat(["torchrun's report of the node that ran rank " + rank + " lists every process of that node " +
                                  "that failed, and not this one: it exited with status 0 before the others failed"]);
    }
    evidence = evidence.concat(reasons);
    var claim = launcherClaim(model);
    var record = null;
    if (rank !== null) {
      for (var i = 0; i < model.launcher.length; i++) {
        var r = model.launcher[i];
        if (r.rank === rank && r.exitcode !== null && r.exitcode !== 0) { record = r; break; }
      }
      if (claim && claim.rank !== null) {
        evidence.push(claim.rank === rank ? "the launcher's report agrees" : "the launcher's report names rank " + claim.rank + " instead, but it only saw exits");
      }
      var text = record && !STOPPED_BY_LAUNCHER.has(record.exitcode) ? exitText(record) + ", without an error message"
        : left ? "rank " + rank + " exited with status 0 while the others were still running, without an error message"
        : "rank " + rank + " printed no error while the others waited for it (it hung, or died without a message)";
      var anchorLine = record ? record.line : !consequences.length
        ? Math.min.apply(null, model.failures.filter(function (f) { return f.consequence; }).map(function (f) { return f.line; }))
        : Math.min.apply(null, consequences[0].matchLines);
      var failure = { line: anchorLine, stream: "", rank: rank, host: record ? record.host : null, time: record ? record.time : null,
                      kind: "silent", text: text, location: null };
      return ["unknown", { line: failure.line + 1, stream: "", rank: rank, host: failure.host, time: failure.time, entry: null,
                           text: text, evidence: evidence }, [failure]];
    }
    var odd = oddWait(model, new Set(consequences.map(function (f) { return f.entry; })));
    if (odd[2] !== null) {
      var own = odd[2], mineFirst = unknownEvent(own);
      var agree = !claim || claim.rank === null ? [] : claim.rank === own.rank ? ["the launcher's report agrees"]
        : ["the launcher's report names rank " + claim.rank + " instead, but it only saw exits"];
      mineFirst.line = own.line + 1;
      mineFirst.evidence = odd[1].concat(agree);
      return ["unknown", mineFirst, [own]];
    }
    if (odd[0] !== null) absent = odd;
    rank = absent[0];
    evidence = evidence.concat(absent[1]);
    if (rank !== null && claim && claim.rank !== null && claim.rank !== rank) {
      evidence.push("the launcher's report names rank " + claim.rank + " instead, but it only saw exits");
    } else if (claim && claim.rank !== null) {
      rank = claim.rank;
      evidence.push("the launcher's report names rank " + claim.rank + " as the root cause");
    }
    if (!consequences.length) {
      var waited = minBy(model.failures.filter(function (f) { return f.consequence; }), function (f) { return [f.line, 0]; });
      var first = unknownEvent(waited);
      first.line = waited.line + 1;
      first.rank = rank === null ? waited.rank : rank;
      first.evidence = evidence;
      return ["unknown", first, [waited]];
    }
    var top = consequences[0];
    var line = Math.min.apply(null, top.matchLines);
    var same = claim && rank === claim.rank;
    return ["consequences", { line: line + 1, stream: "", rank: rank, host: same ? claim.host : null, time: same ? claim.time : null,
                              entry: top.entry, text: top.firstText, evidence: evidence }, []];
  }

  function exitText(record) {
    var code = record.exitcode;
    var where = record.rank !== null ? "rank " + record.rank : "a process";
    var extra = record.message ? " (" + record.message + ")" : "";
    if (code !== null && code < 0) return where + " was killed by signal " + (-code) + extra;
    return where + " exited with status " + code + extra;
  }

  function cmpFinding(a, b) { return b.score - a.score || a.first - b.first || (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0); }

  function buildIncident(model, findings, infos, hitLines) {
    model.finish();
    var consequenceEntries = new Set(findings.filter(function (f) { return infos[f.entry] && infos[f.entry].role === "consequence"; })
      .map(function (f) { return f.entry; }));
    var warningEntries = new Set(findings.filter(function (f) { return infos[f.entry] && infos[f.entry].role === "warning"; })
      .map(function (f) { return f.entry; }));
    explain(model, [].concat.apply([], findings.map(function (f) { return f.matches; })), consequenceEntries, warningEntries);
    var causes = [], consequences = [], notes = [];
    findings.forEach(function (f) {
      var info = infos[f.entry];
      var role = info ? (info.role || "cause") : "cause";
      if (role === "warning") {
        if (info && info.persistent && persisted(f, info.persistent)) { f.persisted = true; causes.push(f); } else notes.push(f);
      } else if (role === "consequence") consequences.push(f);
      else causes.push(f);
    });
    var unknown = unknownCauses(model), handled = [];
    if (unknown.length && model.launcherStarted && !model.launcher.length && !causes.length && !consequences.length &&
        !model.failures.some(function (f) { return f.consequence; }) &&
        !unknown.some(function (u) { return u.text === INCOMPLETE_TRACEBACK; })) {
      handled = unknown; unknown = [];
    }
    var events = [].concat.apply([], causes.map(function (f) { return causeEvents(f, hitLines); })).concat(unknown.map(unknownEvent));
    var first = firstFailure(events, model);
    if (first && first.entry) {
      var firstEntry = first.entry;
      causes.sort(function (a, b) { return ((a.entry !== firstEntry) - (b.entry !== firstEntry)) || cmpFinding(a, b); });
    } else causes.sort(cmpFinding);
    consequences.sort(cmpFinding);
    var ordered = causes.concat(consequences), status = "none";
    if (first) status = first.entry ? "known" : "unknown";
    else if (consequences.length || model.failures.some(function (f) { return f.consequence; })) {
      var consequenceRanks = new Set();
      consequences.forEach(function (f) {
        f.matches.forEach(function (m) {
          m.lines.forEach(function (n) { var l = hitLines.get(n); if (l && l.rank !== null) consequenceRanks.add(l.rank); });
        });
      });
      var outcome = consequenceOnlyFirst(model, consequences, consequenceRanks);
      status = outcome[0]; first = outcome[1]; unknown = outcome[2];
    }
    else if (launcherClaim(model)) {
      var record = launcherClaim(model);
      unknown = [{ line: record.line, stream: "", rank: record.rank, host: record.host, time: record.time, kind: "exit", text: exitText(record), location: null }];
      status = "unknown";
      first = { line: record.line + 1, stream: "", rank: record.rank, host: record.host, time: record.time, entry: null, text: unknown[0].text,
                evidence: ["only the launcher's report shows the failure; the process printed no error"] };
    }
    var causeStreams = new Set(first && first.stream ? [first.stream] : []);
    var downstream = new Set();
    consequences.forEach(function (f) { f.matches.forEach(function (m) { if (m.stream && !causeStreams.has(m.stream)) downstream.add(m.stream); }); });
    model.failures.forEach(function (u) { if (u.consequence && u.stream && !causeStreams.has(u.stream)) downstream.add(u.stream); });
    return { findings: ordered, notes: notes, unknown: unknown, first: first, consequenceStreams: Array.from(downstream).sort(),
             launcher: model.launcher.slice(), status: status, handled: handled };
  }

  // -- the compiled catalogue --------------------------------------------------------------------
  // Signature regexes run on RE2JS (re2js.js, vendored from npm): the JavaScript port of RE2, in
  // linear time like the command line's RE2, and with RE2's reading of every regex (code points,
  // not UTF-16 units; "." is anything but "\n", without the DOTALL flag, exactly as RE2's
  // default). JavaScript's backtracking RegExp could take exponential time on a pattern that
  // RE2 proves linear, such as "( |.)*" or six {word}s in a row. In a worker the page loads
  // re2js.js with importScripts before this file; Node finds it beside this file.
  var RE2 = null;
  function engine() {
    if (RE2 === null) {
      var lib = root.RE2JS || (typeof require === "function" ? require("./re2js.js") : null);
      if (!lib || !lib.RE2JS) throw new Error("the regular-expression engine (re2js.js) is not loaded");
      RE2 = lib.RE2JS;
    }
    return RE2;
  }

  // A signature's regex, compiled on first use: a site of 10,000 entries has 20,000 of them and
  // a log touches few; compiling them all would hold the page for seconds.
  function SignatureRegex(source, where) { this.source = source; this.where = where; this.compiled = null; }
  SignatureRegex.prototype.test = function (text) {
    if (this.compiled === null) {
      try {
        this.compiled = engine().compile(this.source, 0);
      } catch (error) {
        throw new Error(this.where + " does not compile: " + (error && error.message || error));
      }
    }
    return this.compiled.test(text);
  };

  // scanner.prefilter_regex in the browser: anchors with their runs of spaces folded to one
  // space, found in text whose white space is folded the same way (Automaton.scanFolded; a
  // message wrapped at a space is found across the break by Automaton.crossing).
  function foldAnchor(anchor) { return anchor.split(/[ \t]+/).join(" "); }

  function Matcher(data) {
    declare(data);
    this.data = data;
    this.limits = data.limits;
    this.rules = compileRules(data.rules);
    this.decoration = compileDecoration(data.decoration || []);
    this.events = (data.events || []).map(function (r) { return [r[0], new RegExp(r[1])]; });
    this.printedEvents = (data.printed_events || []).map(function (r) { return [r[0], new RegExp(r[1])]; });
    this.fingerprint = data.fingerprint ? new RegExp(data.fingerprint) : null;
    this.errorEvents = new Set(data.error_events || []);
    this.sureCore = data.sure_core || 30;
    this.frameGap = data.frame_gap || 4;
    var eventAnchors = data.event_anchors || [];
    var anchors = [], byAnchor = [], position = new Map(), byFunction = new Map();
    engine();
    this.signatures = data.signatures.map(function (s) {
      var where = "signature " + (s.index + 1) + " of entry " + s.entry;
      var sig = {
        entry: s.entry, index: s.index, specificity: s.specificity, within: s.within || data.limits.default_within,
        multiline: s.steps.length > 1, core: s.core || "", frames: s.frames || [], raises: s.raises || "",
        steps: s.steps.map(function (p) { return new SignatureRegex(p[0], where); }),
        unless: (s.unless || []).map(function (p) { return new SignatureRegex(p[0], where + " (unless)"); })
      };
      // signatures.anchors_of: the steps', the unless patterns' and the core
      s.steps.concat(s.unless || []).map(function (p) { return p[1]; }).concat(s.core ? [s.core] : []).forEach(function (anchor) {
        if (!position.has(anchor)) { position.set(anchor, anchors.length); anchors.push(anchor); byAnchor.push([]); }
        var bucket = byAnchor[position.get(anchor)];
        if (!bucket.length || bucket[bucket.length - 1] !== sig) bucket.push(sig);
      });
      // anchors.SignatureTable.by_function: the signatures that name a raising frame in a function
      sig.frames.forEach(function (frame) {
        if (!byFunction.has(frame[1])) byFunction.set(frame[1], []);
        var bucket = byFunction.get(frame[1]);
        if (!bucket.length || bucket[bucket.length - 1] !== sig) bucket.push(sig);
      });
      return sig;
    });
    this.byFunction = byFunction;
    this.byAnchor = byAnchor;
    this.anchorCount = anchors.length;
    this.anchors = anchors;
    this.eventAnchors = eventAnchors;
    this.exceptionAnchors = new Set(data.exception_anchors || []);
    this.exceptionKinds = new Set(data.exception_kinds || []);
    // incident.MESSAGES, incident.BACKTRACE_GAP: a c10 backtrace this close below a message is its own
    this.messageEvents = new Set(data.message_events || []);
    this.backtraceGap = data.message_backtrace_gap || 3;
    var anchorsOf = new Map();
    byAnchor.forEach(function (sigs, id) { sigs.forEach(function (sig) { if (!anchorsOf.has(sig)) anchorsOf.set(sig, []); anchorsOf.get(sig).push(id); }); });
    this.anchorsOf = anchorsOf;
    // exact anchors (signatures, then events) for a line's text; folded ones for the raw log
    this.automaton = new Automaton(anchors.concat(eventAnchors));
    // anchors.wrap_pieces: each anchor is also looked for by its pieces (a hard wrap cuts it)
    var limits = data.limits;
    this.pieces = anchors.map(function (a) { return wrapPieces(a, limits); });
    var pieces = [].concat.apply([], this.pieces);
    var folded = Array.from(new Set(anchors.concat(pieces, eventAnchors).map(foldAnchor)));
    this.fullPrefilter = new Automaton(folded);
    // anchors.SignatureTable.holds_cut_anchor: a wrap join is read around a line that holds a piece of
    // an anchor that a wrap cut at the line's start or end
    var pieceWords = Array.from(new Set(pieces)), placed = new Map();
    anchors.forEach(function (a, id) {
      this.pieces[id].forEach(function (p) {
        if (!placed.has(p)) placed.set(p, []);
        var list = placed.get(p), offset = a.indexOf(p);
        if (!list.some(function (x) { return x[0] === a && x[1] === offset; })) list.push([a, offset]);
      });
    }, this);
    this.pieceWords = pieceWords;
    this.piecePlaces = placed;
    this.pieceAutomaton = new Automaton(pieceWords);
    this.recordStarts = new Set(data.record_starts || []);
  }

  // anchors.wrap_pieces: the pieces of an anchor, one of which a wrap at min_wrapped columns or
  // more leaves whole (its last two runs of wrap_piece characters, or its two halves)
  function wrapPieces(anchor, limits) {
    var points = Array.from(anchor), size = limits.wrap_piece, n = points.length, found;
    if (n >= 2 * size) found = [points.slice(n - 2 * size, n - size), points.slice(n - size)];
    else found = [points.slice(0, Math.floor((n + 1) / 2)), points.slice(Math.floor(n / 2))];
    var pieces = found.map(function (p) { return trimEnd(p.join(""), " \t", true); });
    return pieces.every(function (p) { return codePoints(p) >= limits.min_piece; }) ? pieces : [];
  }

  // Python's len(): code points, not UTF-16 units
  function codePoints(text) {
    var count = text.length;
    for (var i = 0; i < text.length; i++) {
      var c = text.charCodeAt(i);
      if (c >= 0xD800 && c <= 0xDBFF && (text.charCodeAt(i + 1) & 0xFC00) === 0xDC00) { count--; i++; }
    }
    return count;
  }

  // scanner.Scanner._rebuild: the prefilter without anchors that can no longer add anything
  function livePrefilter(matcher, sat) {
    var live = new Set();
    matcher.anchors.forEach(function (a, id) {
      if (sat.dead.has(id)) return;
      live.add(foldAnchor(a));
      matcher.pieces[id].forEach(function (p) { live.add(foldAnchor(p)); });
    });
    matcher.eventAnchors.forEach(function (a) {
      if (!(sat.exceptionsDead && matcher.exceptionAnchors.has(a))) live.add(foldAnchor(a));
    });
    return new Automaton(Array.from(live));
  }

  Matcher.prototype.candidates = function (text) {
    var ids = this.automaton.find(text);
    var result = [], event = false;
    if (!ids) return { sigs: result, event: false };
    var seen = new Set(), self = this;
    Array.from(ids).sort(function (a, b) { return a - b; }).forEach(function (id) {
      if (id >= self.anchorCount) { event = true; return; }
      self.byAnchor[id].forEach(function (sig) { if (!seen.has(sig)) { seen.add(sig); result.push(sig); } });
    });
    return { sigs: result, event: event };
  };

  function vetoed(sig, numbered, first, last, stream, within) {
    if (!sig.unless.length) return false;
    var low = numbered[first][0] - within, high = numbered[last][0] + within;
    var position = first;
    while (position > 0 && numbered[position - 1][0] >= low) position--;
    for (var i = position; i < numbered.length; i++) {
      var number = numbered[i][0], line = numbered[i][1];
      if (number > high) break;
      if (fits(line.stream, stream) && sig.unless.some(function (re) { return re.test(line.text); })) return true;
    }
    return false;
  }

  // `wrap`: the most physical lines a wrap join read as one (signatures.find_matches): windows that wide
  function findMatches(sig, numbered, firstOnly, wrap) {
    var found = [], within = sig.within * (wrap || 1);
    if (!sig.multiline) {
      for (var p = 0; p < numbered.length; p++) {
        var text = numbered[p][1].text, whole = sig.steps[0].test(text);
        if ((whole || (sig.core && text.indexOf(sig.core) >= 0)) && !vetoed(sig, numbered, p, p, numbered[p][1].stream, within)) {
          found.push({ sig: sig, lines: [numbered[p][0]], stream: numbered[p][1].stream, byCore: !whole });
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
        if (number > start + within) break;
        if (fits(other.stream, stream) && sig.steps[step].test(other.text)) {
          matched.push(number); stream = stream || other.stream; lastPosition = later; step++;
          if (step === sig.steps.length) break;
        }
      }
      if (step === sig.steps.length && !vetoed(sig, numbered, position, lastPosition, stream, within)) {
        found.push({ sig: sig, lines: matched, stream: stream });
        busy.set(line.stream, matched[matched.length - 1]);
        if (firstOnly) break;
      }
    }
    return found;
  }

  // -- reading a log: scanner.Scanner, fed as the text arrives --------------------------------------
  // A partial line longer than this (UTF-16 units) keeps only its start, as the command line keeps
  // only the start of a line longer than its 4 MiB chunk: the scan's memory is a chunk, a partial
  // line and bounded evidence, whatever the size of the log.
  var MAX_PARTIAL = 1 << 22;

  // `matcher.start()` → a scan; `scan.feed(text)` as often as text arrives (any split, even inside
  // a line); `scan.finish(top)` → the report, the same as `matcher.report(wholeText, top)`.
  function Scan(matcher) {
    this.matcher = matcher;
    this.perSig = new Map(); this.hitLines = new Map(); this.errorLines = new Set(); this.frameAt = new Map(); this.model = new LogModel();
    this.model.fingerprint = matcher.fingerprint;
    this.model.exceptionKinds = matcher.exceptionKinds;
    this.model.messageEvents = matcher.messageEvents;
    this.model.backtraceGap = matcher.backtraceGap;
    // saturation (scanner.SATURATION_CHECK): this scan's own prefilter loses dead anchors
    this.check = matcher.limits.saturation_check || 65536;
    this.sat = { saturated: new Set(), dead: new Set(), pending: false, next: this.check, exceptionsDead: false };
    this.prefilter = matcher.fullPrefilter;
    this.partial = "";          // the line being read (no "\n" yet)
    this.dropping = false;      // past MAX_PARTIAL in that line: drop until its end
    this.queue = [];            // complete lines not yet taken: a line is taken with the lines after it
    this.behind = [];           // the lines since the last candidate line (its message may begin there)
    this.wrap = 1;              // the most physical lines a wrap join read as one (findMatches)
    this.fed = -1;              // the last line whose event the log model was fed
    this.lines = 0;             // lines taken
    this.chars = 0;             // characters fed
    this.tail = [];             // the log's last lines (metrics.tail_of), which lossSymptom reads
    this.done = null;
  }

  Matcher.prototype.start = function () { return new Scan(this); };

  Scan.prototype.feed = function (text) {
    if (this.done) throw new Error("this scan is finished");
    if (!text) return;
    this.chars += text.length;
    var from = 0;
    for (;;) {
      var newline = text.indexOf("\n", from);
      if (newline < 0) { this.extend(from ? text.slice(from) : text); return; }
      if (this.partial || this.dropping) {
        this.extend(text.slice(from, newline));
        var whole = this.partial;
        this.partial = ""; this.dropping = false;
        this.complete(whole);
      } else this.complete(text.slice(from, newline));
      from = newline + 1;
    }
  };

  Scan.prototype.extend = function (piece) {
    if (this.dropping || !piece) return;
    this.partial += piece;
    if (this.partial.length > MAX_PARTIAL) { this.partial = this.partial.slice(0, MAX_PARTIAL); this.dropping = true; }
  };

  Scan.prototype.complete = function (raw) {
    if (raw.length > MAX_PARTIAL) raw = raw.slice(0, MAX_PARTIAL);
    this.tail.push(raw);
    if (this.tail.length > shared.metrics.tail_lines) this.tail.shift();
    this.queue.push(raw);
    // a line is taken with the one a wrapped anchor spans and the lines its message was wrapped onto
    while (this.queue.length > this.matcher.limits.max_wrapped_lines + 2) this.take();
  };

  // Blank, as Python's bytes.strip() reads a line (ASCII white space only).
  function blankLine(raw) { return !trimEnd(raw, " \t\n\r\u000b\f", true); }

  // scanner.may_wrap: a physical line long enough to have been wrapped (as printed), and no longer than a wrap
  function mayWrap(raw, m) {
    var width = codePoints(undecorate(cut(raw, m.limits.max_line), m.decoration));
    return width >= m.limits.min_wrapped && width <= m.limits.max_wrapped;
  }

  // The lines read since the last line that holds a signature's anchor or piece (a message may begin there).
  Scan.prototype.remember = function (lines) {
    var behind = this.behind, most = this.matcher.limits.max_wrapped_lines;
    lines.forEach(function (raw) { behind.push(raw); });
    if (behind.length > most) behind.splice(0, behind.length - most);
  };

  // scanner._Scan._before: the lines right before a candidate line (its `physical` lines), since the
  // last line that holds a signature's anchor or piece, that its message may have begun on (each long
  // enough to have been wrapped, and running on into it: wrapStarts); the earliest first
  Scan.prototype.before = function (physical) {
    var found = [], m = this.matcher, behind = this.behind, i = behind.length - 1;
    var back = { next: function () {
      if (i < 0 || found.length >= m.limits.max_wrapped_lines) return null;
      var raw = behind[i--];
      if (blankLine(raw) || !mayWrap(raw, m)) return null;
      found.push(raw);
      return readPhysical(raw, m);
    } };
    var count = wrapStarts(back, physical.map(function (p) { return readPhysical(p, m); }));
    return found.slice(0, count).reverse();
  };

  // scanner._Scan._following: the lines after a candidate line (its `span` first lines of the queue)
  // that may continue its message: none blank, each after a line long enough to have been wrapped,
  // as far as any join could read (a continuation, of one stream, each break at the widest width)
  Scan.prototype.following = function (span, physical) {
    var found = [], m = this.matcher, previous = this.queue[span - 1];
    var lines = physical.map(function (p) { return readPhysical(p, m); });
    var streams = new Set(), width = 0, narrowest = null, last = lines[lines.length - 1];
    lines.forEach(function (l) { if (l.line.stream) streams.add(l.line.stream); width = Math.max(width, l.width); });
    for (var k = span; k < this.queue.length && found.length < m.limits.max_wrapped_lines && mayWrap(previous, m); k++) {
      if (blankLine(this.queue[k])) break;
      var line = readPhysical(this.queue[k], m);
      var cutAt = last.width + 1 + firstWord(line.line);
      narrowest = narrowest === null ? cutAt : Math.min(narrowest, cutAt);
      width = Math.max(width, line.width);
      if (line.line.stream) streams.add(line.line.stream);
      if (!continues(line) || streams.size > 1 || narrowest <= width) break;
      found.push(this.queue[k]);
      previous = this.queue[k]; last = line;
    }
    return found;
  };

  // scanner._physical_info: what the wrap join reads of a physical line
  function readPhysical(raw, m) {
    var line = parseLine(raw, m.rules, m.limits, m.decoration);
    return { line: line, width: printedWidth(raw, m), record: startsRecord(line, raw, m) };
  }

  // scanner.continues: may a physical line continue a message wrapped onto it
  function continues(read) {
    return !!trimEnd(read.line.text, " \t", true) && read.line.time === null && !read.record;
  }

  // scanner.continues_message: may a physical line (as readPhysical reads it) continue a message
  // of `line`'s process
  function continuesMessage(line, read) {
    return continues(read) && !(read.line.stream && read.line.stream !== line.stream);
  }

  // scanner._Scan._crosses: may an anchor carried over a line break join these two physical lines
  function crosses(raw, next, m) {
    return continuesMessage(readPhysical(raw, m).line, readPhysical(next, m));
  }

  // scanner.first_word: the length of a continuation line's first word
  function firstWord(line) {
    return codePoints(trimEnd(line.text, " \t", true).split("\t").join(" ").split(" ")[0]);
  }

  // scanner.wrap_starts: how many of the lines before a candidate line (read from `back`, the latest
  // first) its message may have begun on: read back while each could be a continuation of one stream
  // and every break is at the widest line's width
  function wrapStarts(back, physical) {
    var streams = new Set();
    physical.forEach(function (p) { if (p.line.stream) streams.add(p.line.stream); });
    if (physical.some(function (p) { return !continues(p); }) || streams.size > 1) return 0;
    var width = Math.max.apply(null, physical.map(function (p) { return p.width; })), narrowest = null;
    for (var k = 0; k + 1 < physical.length; k++) {
      var inner = physical[k].width + 1 + firstWord(physical[k + 1].line);
      narrowest = narrowest === null ? inner : Math.min(narrowest, inner);
    }
    var count = 0, following = physical[0], line;
    while ((line = back.next()) !== null) {
      var cutAt = line.width + 1 + firstWord(following.line);
      narrowest = narrowest === null ? cutAt : Math.min(narrowest, cutAt);
      width = Math.max(width, line.width);
      var stream = line.line.stream;
      if (narrowest <= width || (stream && streams.size && !streams.has(stream))) break;
      count++;
      if (!continues(line)) break;
      if (stream) streams.add(stream);
      following = line;
    }
    return count;
  }

  // The first line of the queue, with the lines after it, as scanner._scan_block reads a candidate line.
  Scan.prototype.take = function () {
    var raw = this.queue[0], next = this.queue[1];
    var n = this.lines;
    var m = this.matcher, limits = m.limits, rules = m.rules, decoration = m.decoration, sat = this.sat;
    var scanned, within, span;
    for (;;) {
      scanned = this.prefilter.scanFolded(raw); within = scanned.first; span = 1;
      var ending = this.prefilter.endsAtBreak(scanned);
      if (next !== undefined) {
        // an anchor that starts on this line and continues on the next (wrapped at a space), or
        // that ends with a blank at the break and takes the next line's leading blanks
        var crossing = this.prefilter.crossing(scanned, next);
        if (ending >= 0 && /^[ \t]/.test(next) && (crossing < 0 || ending < crossing)) crossing = ending;
        if (crossing >= 0 && (within < 0 || crossing <= within)) span = 2;
        // scanner._Scan._crosses: only onto a line that can continue a message of this process
        if (span === 2 && !crosses(raw, next, m)) span = 1;
      }
      if (span === 1 && ending >= 0 && (within < 0 || ending < within)) within = ending;
      if (within < 0 && span === 1) {
        this.queue.shift(); this.lines++;
        this.remember([raw]);
        return;
      }
      if (n < sat.next) break;
      sat.next = (Math.floor(n / this.check) + 1) * this.check;
      if (!(sat.pending || (this.model.saturated() && !sat.exceptionsDead))) break;
      sat.exceptionsDead = this.model.saturated();
      this.prefilter = livePrefilter(m, sat);
      sat.pending = false;   // and look at this line again with the smaller prefilter
    }
    var physical = span === 2 ? [raw, next] : [raw];
    var line = joinLines(physical, rules, limits, decoration);
    var sigs = m.candidates(line.text).sigs;
    // an event line holds an event anchor as printed (a rich frame's box is part of it)
    var event = m.candidates(physical.join("\n")).event ? eventOf(line, physical, m) : null;
    // its message, where a wrap cut it into physical lines (scanner._take_line), read around a
    // line that holds a signature's anchor whose pattern it does not match alone, or no anchor but
    // a wrap piece or an error (scanner._line_info); another line is read alone, and a join may begin on it
    var joins = sigs.length ? !sigs.every(function (s) { return hits(s, line.text); })
      : (!!event && m.errorEvents.has(event[0])) || holdsCutAnchor(m, line.text);
    var before = joins ? this.before(physical) : [], following = joins ? this.following(span, physical) : [], took = 0;
    if (before.length || following.length) {
      var joined = wrapInfo(m, line, sigs, event, physical, before, following);
      if (joined) {
        line = joined.line; sigs = joined.sigs; took = joined.took;
        n -= joined.back;
        this.wrap = Math.max(this.wrap, joined.back + span + took);
        var first = joined.back ? [before[before.length - joined.back]] : physical;
        event = m.candidates(first.join("\n")).event ? eventOf(line, first, m) : null;
      }
    }
    var taken = this.queue.splice(0, span + took);
    this.lines += span + took;
    if (joins) this.behind = [];
    else this.remember(taken);
    var isError = false;
    if (event) {
      isError = m.errorEvents.has(event[0]);
      if (n > this.fed) {   // (a join begun on a line read before: fed then)
        this.fed = n;
        this.model.feed(n, line, event[0], event[1]);
        if (event[0] === "frame") this.frameAt.set(line.stream, n);
      }
    }
    // scanner._take_line: or the place of a traceback's exception line, its class cut off (a
    // frame's `raise` source line is such a place too)
    if (!event || event[0] === "raise") {
      var frame = this.frameAt.has(line.stream) ? this.frameAt.get(line.stream) : -m.frameGap - 1;
      isError = n - frame > 0 && n - frame <= m.frameGap;
    }
    if (sigs.length) {
      var kept = false;
      for (var c = 0; c < sigs.length; c++) {
        var bucket = this.perSig.get(sigs[c]);
        if (!bucket) { bucket = []; this.perSig.set(sigs[c], bucket); }
        if (bucket.length < limits.max_hits_per_signature) {
          bucket.push([n, line]); kept = true;
          if (bucket.length === limits.max_hits_per_signature) this.saturate(sigs[c]);
        }
      }
      // a line in no bucket can be in no match: keeping it would grow with the log
      if (kept) { this.hitLines.set(n, line); if (isError) this.errorLines.add(n); }
    }
  };

  // scanner.Scanner._wrap_info: a candidate line's message where a wrap cut it into physical lines,
  // begun on the earliest line before it that runs on into it (not when the line opens a record),
  // else on the line itself, joined with the following lines that the most signatures need.
  function wrapInfo(m, line, sigs, event, physical, before, following) {
    var starts = [];
    if (before.length && !(event && m.recordStarts.has(event[0]))) {
      for (var back = before.length; back >= 1; back--) {
        var at = before.length - back;
        starts.push({ back: back, first: parseLine(before[at], m.rules, m.limits, m.decoration), physical: [before[at]],
                      rest: before.slice(at + 1).concat(physical, following), own: back - 1 + physical.length });
      }
    }
    starts.push({ back: 0, first: line, physical: physical, rest: following, own: 0 });
    var whole = sigs.filter(function (s) { return hits(s, line.text); });
    for (var i = 0; i < starts.length; i++) {
      var start = starts[i];
      var joins = wrapTexts(m, start.first, start.physical, start.rest);
      if (joins.length < Math.max(start.own, 1)) continue;   // the lines before do not run on into it
      var last = joins[joins.length - 1], added = new Set();
      m.candidates(last.spaced).sigs.concat(m.candidates(last.tight).sigs).forEach(function (s) {
        if (whole.indexOf(s) < 0) added.add(s);
      });
      var fresh = Array.from(added);
      if (!fresh.length) continue;
      var pieces = [start.first.text], best = null, most = 0;
      for (var k = 0; k < joins.length; k++) {
        var took = k + 1 - start.own;
        pieces.push(joins[k].text);
        if (took < 0) continue;   // not yet at the candidate line
        var texts = joins[k].spaced === joins[k].tight ? [joins[k].spaced] : [joins[k].spaced, joins[k].tight];
        for (var t = 0; t < texts.length; t++) {
          var text = texts[t];
          var count = fresh.reduce(function (sum, s) { return sum + needed(s, text, pieces); }, 0);   // (a pattern counts over a core)
          if (count > most && whole.every(function (s) { return hits(s, text); })) { best = { text: text, took: took }; most = count; }
        }
      }
      if (best) {
        return { line: makeLine(best.text, start.first.rank, start.first.host, start.first.time),
                 sigs: m.candidates(best.text).sigs, back: start.back, took: best.took };
      }
    }
    return null;
  }

  // anchors.SignatureTable.holds_cut_anchor: a wrap piece of an anchor that runs on past the text's start or end
  function holdsCutAnchor(m, text) {
    var ids = m.pieceAutomaton.find(text);
    if (!ids) return false;
    return Array.from(ids).some(function (id) {
      var piece = m.pieceWords[id], places = m.piecePlaces.get(piece);
      for (var at = text.indexOf(piece); at >= 0; at = text.indexOf(piece, at + 1)) {
        for (var k = 0; k < places.length; k++) if (cutAtEdge(text, at - places[k][1], places[k][0])) return true;
      }
      return false;
    });
  }

  // anchors.cut_at_edge: an anchor placed at text[begin], cut by the text's start or end, agreeing up to it
  function cutAtEdge(text, begin, anchor) {
    var end = begin + anchor.length;
    if (begin >= 0 && end <= text.length) return false;
    var low = Math.max(begin, 0), high = Math.min(end, text.length);
    return low < high && text.slice(low, high) === anchor.slice(low - begin, high - begin);
  }

  function hits(sig, text) { return sig.steps.some(function (r) { return r.test(text); }); }

  // Does the joined text match the signature where none of its physical lines does alone: 2 for a
  // step's pattern, 1 for the core only, else 0
  function needed(sig, text, pieces) {
    if (sig.steps.some(function (r) { return r.test(text) && !pieces.some(function (p) { return r.test(p); }); })) return 2;
    return sig.core && text.indexOf(sig.core) >= 0 && !pieces.some(function (p) { return p.indexOf(sig.core) >= 0; }) ? 1 : 0;
  }

  // scanner.printed_width: a physical line's width as printed (prefixes and blanks at its end counted)
  function printedWidth(raw, m) {
    var line = trimEnd(cut(raw, m.limits.max_line), "\r");
    return codePoints(undecorate(line, m.decoration)) + line.length - trimEnd(line, " \t").length;
  }

  // scanner._starts_record: a physical line that opens a record of its own (a traceback's line, an exception)
  function startsRecord(more, raw, m) {
    if (!m.candidates(raw).event) return false;
    var event = recognise(more.text, m.events);
    return !!event && m.recordStarts.has(event[0]);
  }

  // scanner.wrap_texts: the message joined over each of the following lines that continue it, as
  // {spaced, tight, text}: breaks read as a space, or as nothing where no blank stood at them.
  function wrapTexts(m, line, physical, following) {
    var texts = [], spaced = line.text, tight = line.text, max = m.limits.max_line;
    var width = Math.max.apply(null, physical.map(function (p) { return printedWidth(p, m); }));
    var narrowest = null, last = physical[physical.length - 1];
    for (var i = 0; i < following.length; i++) {
      var raw = following[i], read = readPhysical(raw, m), more = read.line;
      if (!continuesMessage(line, read)) break;
      var text = trimEnd(more.text, " \t", true);
      var word = text.split("\t").join(" ").split(" ")[0];
      var cutAt = printedWidth(last, m) + 1 + codePoints(word);
      narrowest = narrowest === null ? cutAt : Math.min(narrowest, cutAt);
      width = Math.max(width, read.width);
      if (narrowest <= width) break;
      var end = trimEnd(last, "\r"), blank = /[ \t]$/.test(end) || /^[ \t]/.test(more.text);
      spaced = cut(spaced + " " + text, max);
      tight = cut(tight + (blank ? " " : "") + text, max);
      texts.push({ spaced: spaced, tight: tight, text: text });
      last = raw;
    }
    return texts;
  }

  Scan.prototype.saturate = function (sig) {
    var m = this.matcher, sat = this.sat;
    sat.saturated.add(sig);
    (m.anchorsOf.get(sig) || []).forEach(function (id) {
      if (!sat.dead.has(id) && m.byAnchor[id].every(function (s) { return sat.saturated.has(s); })) {
        sat.dead.add(id); sat.pending = true;
      }
    });
  };

  // scanner.core_holds: a match through a core counts when the core is long or its line is an error
  function coreHolds(match, errorLines, sureCore) {
    return !match.byCore || match.sig.core.length >= sureCore || errorLines.has(match.lines[0]);
  }

  // The scan as the ranking reads it ({linesScanned, matches, hitLines, matchLines, model}).
  Scan.prototype.result = function () {
    if (this.done) return this.done;
    if (this.partial || this.dropping) { var last = this.partial; this.partial = ""; this.dropping = false; this.complete(last); }
    while (this.queue.length) this.take();
    var limits = this.matcher.limits, perSig = this.perSig, hitLines = this.hitLines;
    var errorLines = this.errorLines, sureCore = this.matcher.sureCore, wrap = this.wrap;
    var matches = [], kept = new Set(), matchLines = new Map();
    this.matcher.signatures.forEach(function (sig) {
      var numbered = perSig.get(sig);
      if (!numbered) return;
      var all = findMatches(sig, numbered, false, wrap);
      if (sig.core) all = all.filter(function (m) { return coreHolds(m, errorLines, sureCore); });
      if (all.length) {
        if (!matchLines.has(sig.entry)) matchLines.set(sig.entry, []);
        var list = matchLines.get(sig.entry);
        all.forEach(function (m) { list.push(m.lines[0]); });
      }
      all.slice(0, limits.max_matches_per_signature).forEach(function (m) {
        matches.push(m);
        m.lines.forEach(function (k) { kept.add(k); });
      });
    });
    hitLines.forEach(function (_v, k) { if (!kept.has(k)) hitLines.delete(k); });
    this.model.finish();
    frameMatches(this.model.failures, this.matcher.byFunction, matches, this.model.reportLines()).forEach(function (found) {
      var m = found[0];
      matches.push(m);
      hitLines.set(m.lines[0], found[1]);
      if (!matchLines.has(m.sig.entry)) matchLines.set(m.sig.entry, []);
      matchLines.get(m.sig.entry).push(m.lines[0]);
    });
    matches.sort(function (a, b) {
      return a.lines[0] - b.lines[0] || (a.sig.entry < b.sig.entry ? -1 : a.sig.entry > b.sig.entry ? 1 : 0) || a.sig.index - b.sig.index;
    });
    this.perSig = null;
    this.done = { linesScanned: this.lines, matches: matches, hitLines: hitLines, matchLines: matchLines, model: this.model,
                  tail: this.tail };
    return this.done;
  };

  // scanner._event_of: the event a candidate line is, by its text, else by what its first physical
  // line shows as printed (a progress bar the decoration removed: events.PRINTED_RULES)
  function eventOf(line, physical, m) {
    return recognise(line.text, m.events) || recognise(cut(physical[0], m.limits.max_line), m.printedEvents);
  }

  // scanner.frame_matches: a traceback cut before its message, named by its declared raising frame
  function frameMatches(failures, byFunction, matches, reports) {
    var found = [];
    failures.forEach(function (failure) {
      if (failure.kind === "cpp" && failure.cppFrames.length) {
        if (!covered(failure, matches, reports)) found = found.concat(cppFrameMatch(failure, byFunction));
        return;
      }
      if (failure.kind !== "exception" || !failure.frame) return;
      var number = failure.frame[0], path = failure.frame[1].split("\\").join("/"), fn = failure.frame[2];
      var sigs = byFunction.get(fn);
      if (!sigs || covered(failure, matches, reports)) return;
      var shown = failure.text === INCOMPLETE_TRACEBACK ? "" : failure.text.split(":")[0].split(".").pop();
      if (!shown && !failure.frame[3]) return;
      for (var i = 0; i < sigs.length; i++) {
        var sig = sigs[i];
        if (shown && shown !== sig.raises) continue;
        var hit = sig.frames.some(function (frame) {
          var suffix = frame[0];
          return frame[1] === fn && (path === suffix || (path.length > suffix.length && path.slice(-suffix.length - 1) === "/" + suffix));
        });
        if (hit) {
          found.push([{ sig: sig, lines: [number], stream: failure.stream, byCore: false, byFrame: true },
                      makeLine(failure.location || "", failure.rank, failure.host, null)]);
          break;
        }
      }
    });
    return found;
  }
  // scanner._cpp_frame_match: a C++ error named by a declared raising frame of its backtrace
  function cppFrameMatch(failure, byFunction) {
    for (var i = 0; i < failure.cppFrames.length; i++) {
      var c = failure.cppFrames[i], sigs = byFunction.get(c[2].split("::").pop()) || [];
      for (var j = 0; j < sigs.length; j++) {
        var sig = sigs[j];
        if (sig.frames.some(function (frame) { return cppFrameFits(c[1], c[2], frame[0], frame[1]); })) {
          return [[{ sig: sig, lines: [c[0]], stream: failure.stream, byCore: false, byFrame: true },
                   makeLine(c[3], failure.rank, failure.host, null)]];
        }
      }
    }
    return [];
  }
  // scanner.cpp_frame_fits: the header's file and function, or a `frame #N:` line's function qualified
  // by the declared file's name
  function cppFrameFits(file, fn, suffix, name) {
    if (file) {
      var path = file.split("\\").join("/");
      return fn === name && (path === suffix || (path.length > suffix.length && path.slice(-suffix.length - 1) === "/" + suffix));
    }
    var scopes = fn.split("::"), stem = suffix.split("/").pop().split(".")[0];
    return scopes.length > 1 && scopes[scopes.length - 1] === name && scopes.slice(0, -1).indexOf(stem) >= 0;
  }

  // scanner._covered: a signature matched a line of the failure's traceback or just below it
  function covered(failure, matches, reports) {
    return matches.some(function (m) { return fits(m.stream, failure.stream) && covers(failure, m.lines, reports); });
  }

  Scan.prototype.finish = function (top) { return this.matcher.reportOf(this.result(), top); };

  // Scan a whole log text, as scanner.Scanner does: fed in slices, as a file arrives.
  // `progress(fraction)` is called after each slice.
  var SLICE = 1 << 18;
  Matcher.prototype.scan = function (text, progress) {
    var scan = this.start();
    for (var from = 0; from < text.length; from += SLICE) {
      scan.feed(text.slice(from, from + SLICE));
      if (progress && from + SLICE < text.length) progress((from + SLICE) / text.length);
    }
    return scan.result();
  };

  // -- what the loss the log ends with shows (rootcause/matching/metrics.py) ----------------------
  var METRIC_BLANKS = " \t\n\r\u000b\f";

  // metrics.tail_lines: the log's last lines, each cut as every line is read
  function tailLines(tail, limits) {
    return tail.map(function (raw) { return cut(trimEnd(raw, "\r"), limits.max_line); });
  }

  // metrics._record: a line's training loss as printed (its last loss record), and whether it is an RL record
  function lossRecord(raw, metrics) {
    var value = null, found, record = new RegExp(metrics.loss_record, "g");
    while ((found = record.exec(raw)) !== null) {
      value = found[1];
      if (found[0] === "") record.lastIndex++;
    }
    return value === null ? null : [value, new RegExp(metrics.rl_record).test(raw)];
  }

  // metrics.loss_symptom
  function lossSymptom(lines, first, infos, m) {
    var metrics = shared.metrics, records = [], NONFINITE = new RegExp(metrics.nonfinite);
    lines.forEach(function (raw, i) {
      var found = lossRecord(raw, metrics);
      if (found) records.push([first + i, raw, found[0], found[1]]);
    });
    if (!records.length) return null;
    var last = records[records.length - 1], sign, still;
    if (NONFINITE.test(last[2])) {
      sign = last[3] ? "rl-loss-nonfinite" : "loss-nonfinite";
      still = function (v) { return NONFINITE.test(v); };
    } else if (Number(last[2]) === 0 && !last[3]) {
      sign = "loss-zero";
      still = function (v) { return !NONFINITE.test(v) && Number(v) === 0; };
    } else return null;
    var start = records.length - 1;
    while (start > 0 && still(records[start - 1][2])) start--;
    if (sign === "loss-zero" && start > 0 && Number(records[start - 1][2]) < metrics.zero_after) return null;
    var entries = metrics.signs[sign].entries.filter(function (i) { return infos[i]; }).map(function (i) {
      var info = infos[i];
      return { entry: i, title: info.title, summary: info.summary, url: info.url, check: info.check,
               check_command: info.check_command, fix: info.fix };
    });
    if (!entries.length) return null;
    var raw = records[start][1], line = parseLine(raw, m.rules, m.limits, m.decoration);
    var record = new RegExp(metrics.loss_record);
    var shown = raw.split("\r").filter(function (part) { return record.test(part); });
    return { sign: sign, says: metrics.signs[sign].says, line: records[start][0] + 1, rank: line.rank, host: line.host,
             text: trimEnd(shown[shown.length - 1], METRIC_BLANKS, true), entries: entries };
  }

  // ranking.findings_of
  function findingsOf(scan) {
    var byEntry = new Map();
    scan.matches.forEach(function (m) {
      if (!byEntry.has(m.sig.entry)) byEntry.set(m.sig.entry, []);
      byEntry.get(m.sig.entry).push(m);
    });
    var findings = [];
    byEntry.forEach(function (matches, entry) {
      var firstMatch = minBy(matches, function (m) { return [m.lines[0], 0]; });
      var line = scan.hitLines.get(firstMatch.lines[0]);
      var lines = (scan.matchLines.get(entry) || []).slice().sort(function (a, b) { return a - b; });
      var read = matches.filter(function (m) { return !m.byFrame; });
      if (!read.length) {   // ranking.findings_of: the message is not in the log, its raising frame is
        findings.push({ entry: entry, score: shared.frame_score, confidence: "medium", matches: matches, first: firstMatch.lines[0],
                        matchLines: lines, firstText: line ? line.text : "", persisted: false, byFrame: true });
        return;
      }
      var distinct = new Map(), whole = new Set();
      read.forEach(function (m) { distinct.set(m.sig.index, m.sig); if (!m.byCore) whole.add(m.sig.index); });
      var sigs = Array.from(distinct.values());
      // ranking.findings_of: a signature matched only through its core is evidence of the core's length
      var best = Math.max.apply(null, sigs.map(function (s) { return whole.has(s.index) ? s.specificity : s.core.length; }));
      var score = best + 10 * (sigs.length - 1);
      var multiline = sigs.some(function (s) { return s.multiline; });
      var confidence = whole.size ? (multiline || best >= 40 || sigs.length > 1 ? "high" : best >= 25 ? "medium" : "low")
        : (best >= 25 ? "medium" : "low");
      findings.push({ entry: entry, score: score, confidence: confidence, matches: matches, first: firstMatch.lines[0],
                      matchLines: lines, firstText: line ? line.text : "", persisted: false, byFrame: false });
    });
    findings.sort(cmpFinding);
    return findings;
  }

  // ranking._role: an entry's role, but a warning that persisted is a cause
  function roleOf(f, infos) { return f.persisted ? "cause" : ((infos[f.entry] || {}).role || "cause"); }

  function causesFirst(findings, consequences, roles) {
    var order = findings.slice();
    for (var round = 0; round < order.length * order.length + 1; round++) {
      var moved = false;
      var position = new Map();
      order.forEach(function (f, i) { position.set(f.entry, i); });
      for (var i = 0; i < order.length; i++) {
        var cause = order[i];
        var above = (consequences[cause.entry] || []).filter(function (c) {
          return position.has(c) && position.get(c) < position.get(cause.entry) && roles[c] === roles[cause.entry];
        }).map(function (c) { return position.get(c); });
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

  Matcher.prototype.rank = function (scan) {
    var infos = this.data.entries;
    var incident = buildIncident(scan.model, findingsOf(scan), infos, scan.hitLines);
    incident.symptom = null;
    if (incident.status === "none") {
      var lines = tailLines(scan.tail, this.limits);
      var symptom = lossSymptom(lines, scan.linesScanned - lines.length, infos, this);
      if (symptom) {
        incident.status = "symptom"; incident.symptom = symptom;
        incident.first = { line: symptom.line, stream: "", rank: symptom.rank, host: symptom.host, time: null,
                           entry: symptom.entries[0].entry, text: symptom.text, evidence: ["no error line: " + symptom.says] };
      }
    }
    var roles = {};
    incident.findings.forEach(function (f) { roles[f.entry] = roleOf(f, infos); });
    incident.findings = causesFirst(incident.findings, this.data.consequences, roles);
    return incident;
  };

  // -- the report (ranking.report_json), field for field (bytes_scanned and "possible" aside) ------

  // ranking._steady: below the first failure, a consequence carries no strength of its own
  function steady(results, status) {
    if (status !== "consequences" || results.some(function (r) { return r.role === "cause"; })) {
      results.forEach(function (r) { if (r.role === "consequence") r.confidence_text = CONSEQUENCE_WORDS; });
    }
    return results;
  }

  function entryJson(f, scan, infos, limits) {
    var info = infos[f.entry];
    var byNumber = new Map();
    f.matches.forEach(function (m) {
      m.lines.forEach(function (n) {
        var line = scan.hitLines.get(n);
        byNumber.set(n + 1, { line: n + 1, rank: line ? line.rank : null, host: line ? line.host : null, text: line ? line.text : "" });
      });
    });
    var lines = Array.from(byNumber.values()).sort(byLine);
    var ranks = Array.from(new Set(lines.map(function (l) { return l.rank; }).filter(function (r) { return r !== null; }))).sort(function (a, b) { return a - b; });
    var sigs = Array.from(new Set(f.matches.map(function (m) { return m.sig.index + 1; }))).sort(function (a, b) { return a - b; });
    return {
      entry: f.entry, title: info ? info.title : f.entry, summary: info ? info.summary : "", url: info ? info.url : "",
      role: roleOf(f, infos),
      confidence: f.confidence, confidence_text: f.byFrame ? shared.frame_words : CONFIDENCE_WORDS[f.confidence], score: f.score, signatures: sigs,
      ranks: ranks, count: f.matchLines.length, lines: lines.slice(0, limits.max_lines_shown),
      more_lines: Math.max(0, lines.length - limits.max_lines_shown),
      check: info ? info.check : "", check_command: info ? info.check_command : "", fix: info ? info.fix : ""
    };
  }

  function failureJson(u) {
    return { line: u.line + 1, rank: u.rank, host: u.host, stream: u.stream, time: u.time, kind: u.kind, text: u.text, location: u.location };
  }

  function where(rank, host) {
    if (rank !== null && rank !== undefined && host) return "rank " + rank + " on " + host;
    if (rank !== null && rank !== undefined) return "rank " + rank;
    return host || "";
  }

  function streamsText(streams) {
    var ranks = streams.map(function (s) {
      var cut = s.indexOf("#"), host = s.slice(0, cut), rank = s.slice(cut + 1);
      return rank ? "rank " + rank : host;
    });
    if (ranks.length > 4) return ranks.length + " other processes";
    if (ranks.length === 1) return ranks[0];
    return ranks.slice(0, -1).join(", ") + " and " + ranks[ranks.length - 1];
  }

  function shortLocation(location) {
    if (!location) return "";
    if (location.lastIndexOf('File "', 0) === 0) {
      var rest = location.slice(6), quote = rest.indexOf('"');
      var path = quote >= 0 ? rest.slice(0, quote) : rest, after = quote >= 0 ? rest.slice(quote + 1) : "";
      return path.slice(path.lastIndexOf("/") + 1) + after;
    }
    return location;
  }

  function headline(incident, infos) {
    var first = incident.first;
    if (incident.status === "none") {
      var n = incident.notes.length, text0 = "No failure found.";
      if (incident.handled.length) {
        var h = incident.handled.length;
        text0 += " " + h + " error" + (h !== 1 ? "s were" : " was") + " printed and handled: the launcher reported no failed process.";
      }
      return text0 + (n ? " " + n + " benign warning" + (n !== 1 ? "s" : "") + " noted." : "");
    }
    var place = first ? where(first.rank, first.host) : "";
    if (incident.status === "symptom") {
      var sy = incident.symptom;
      return "No error line, but " + sy.says + " (line " + sy.line + (place ? ", " + place : "") + "): " + sy.entries[0].title + ".";
    }
    if (incident.status === "consequences") {
      var ci = infos[first.entry];
      var text = "Only consequences of a failure are in this log (" + (ci ? ci.title : first.entry) + ")";
      return text + (place ? "; the evidence points at " + place + "." : "; the failing process's own error is not in it.");
    }
    var subject = place ? place.charAt(0).toUpperCase() + place.slice(1) + " failed first" : "The first failure";
    var sentence;
    if (incident.status === "known") {
      var info = infos[first.entry];
      sentence = subject + ": " + (info ? info.title : first.entry) + ".";
    } else {
      var loc = first.location ? " (" + shortLocation(first.location) + ")" : "";
      sentence = subject + " with an error no entry explains: " + first.text + loc + ".";
    }
    var cs = incident.consequenceStreams;
    var others = streamsText(cs);
    if (cs.length) sentence += " " + others.charAt(0).toUpperCase() + others.slice(1) + " then show" + (cs.length === 1 ? "s" : "") + " consequences of it.";
    return sentence;
  }

  Matcher.prototype.report = function (text, top, progress) {
    return this.reportOf(this.scan(text, progress), top);
  };

  // ranking.stopped_in: where a log with no failure stops, when its last lines are a start-up phase's
  function stoppedIn(scan, incident, phases, tail, infos) {
    var last = scan.model ? scan.model.lastPhase : null;
    if (incident.status !== "none" || !last || scan.linesScanned - last[1] > tail || !phases[last[0]]) return null;
    var entries = phases[last[0]].entries.filter(function (i) { return infos[i]; })
      .map(function (i) { return { entry: i, title: infos[i].title, url: infos[i].url }; });
    return { phase: last[0], title: phases[last[0]].title, line: last[1] + 1, entries: entries };
  }

  Matcher.prototype.reportOf = function (scan, top) {
    var incident = this.rank(scan);
    var infos = this.data.entries, limits = this.limits;
    top = top == null ? 5 : top;
    var stopped = stoppedIn(scan, incident, this.data.phases || {}, this.data.phase_tail || 10, infos);
    return {
      lines_scanned: scan.linesScanned,
      status: incident.status,
      headline: headline(incident, infos) + (stopped ? " The log stops during " + stopped.title + " (line " + stopped.line +
        "): if the job hung there, see the possible causes below." : ""),
      stopped: stopped,
      symptom: incident.symptom,
      results: steady(incident.findings.slice(0, top).map(function (f) { return entryJson(f, scan, infos, limits); }), incident.status),
      first_failure: incident.first,
      unknown: incident.unknown.slice(0, top).map(failureJson),
      notes: incident.notes.map(function (f) { return entryJson(f, scan, infos, limits); }),
      handled: incident.handled.slice(0, top).map(failureJson),
      consequence_streams: incident.consequenceStreams,
      next_steps: incident.status === "consequences" ? (this.data.next_steps || []).slice() : [],
      launcher: incident.launcher.slice(0, 32).map(function (r) {
        return { line: r.line + 1, source: r.source, rank: r.rank, local_rank: r.local_rank, host: r.host, exitcode: r.exitcode, time: r.time, root: r.root, message: r.message };
      })
    };
  };

  var api = { Matcher: Matcher, parseLine: parseLine, compileRules: compileRules, compileDecoration: compileDecoration,
              undecorate: undecorate, Automaton: Automaton, timeKey: timeKey, SignatureRegex: SignatureRegex };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.RootcauseMatcher = api;
})(typeof self !== "undefined" ? self : this);
