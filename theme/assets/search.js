// Search over the sharded index written by rootcause/site/search.py. Loaded on first use of a search box.
// tokens() must stay identical to rootcause.text.tokens (tests compare them on the same inputs).
(function (root) {
  "use strict";
  var STOPWORDS = null;
  var RUN = /[A-Za-z0-9_]+/g;
  var PART = /[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+/g;
  var HEXISH = /^(?:0x[0-9a-f]+|(?=[0-9a-f]*[0-9])[0-9a-f]{8,})$/;
  var JOIN = /([A-Za-z]+)[-_]([0-9]{1,3})(?![0-9A-Za-z])/g;  // "ZeRO-3" is also "zero3" (rootcause.text._JOIN)
  var DEFAULT_STOPWORDS = ("a an and are as at be but by for from has have if in into is it its no not of on or " +
    "that the their then there these this to was were will with you your " +
    "how what why when where which do does did can could should would my me we our after while during using get got").split(" ");

  function volatile(token) {
    return (/^[0-9]+$/.test(token) && token.length > 1) || HEXISH.test(token);
  }

  function keep(token, stop) {
    return (token.length >= 2 || /^[0-9]$/.test(token)) && !stop.has(token) && !volatile(token);
  }

  function stem(token) {
    if (!/^[a-z]+$/.test(token)) return token;
    if (token.length > 4 && /ies$/.test(token)) return token.slice(0, -3) + "y";
    if (token.length > 3 && /s$/.test(token) && !/(ss|us|is)$/.test(token)) return token.slice(0, -1);
    return token;
  }

  function tokens(text, stopwords) {
    var stop = stopwords || STOPWORDS || new Set(DEFAULT_STOPWORDS);
    var out = [];
    text = String(text);
    var joins = [], m, next = 0;
    if (/[-_]/.test(text)) {
      JOIN.lastIndex = 0;
      while ((m = JOIN.exec(text)) !== null) joins.push([m.index, m[1].toLowerCase() + m[2]]);
    }
    var runMatch;
    RUN.lastIndex = 0;
    while ((runMatch = RUN.exec(text)) !== null) {
      var run = runMatch[0];
      // a word joined to a short number ("ZeRO-3") first gives the two written together ("zero3")
      while (next < joins.length && joins[next][0] < runMatch.index + run.length) out.push(joins[next++][1]);
      var whole = run.toLowerCase();
      if (!volatile(whole)) {
        if (keep(whole, stop)) out.push(stem(whole));
        // parts of a chunk split at a case or digit change: words of 3 letters or more, and digits
        var parts = [];
        var chunks = run.split("_");
        for (var j = 0; j < chunks.length; j++) {
          var found = chunks[j].match(PART) || [];
          for (var k = 0; k < found.length; k++) {
            if (found.length === 1 || found[k].length >= 3 || /^[0-9]+$/.test(found[k])) parts.push(found[k]);
          }
        }
        for (var p = 0; p < parts.length; p++) {
          var part = parts[p].toLowerCase();
          if (keep(part, stop) && part !== whole) out.push(stem(part));
        }
      }
    }
    return out;
  }

  // The term of a whole short name, as rootcause.text.name_key: "~" + its tokens read without case.
  var NAME_TOKENS = 8;
  function nameKey(text, stopwords) {
    var found = Array.from(new Set(tokens(String(text).toLowerCase(), stopwords).filter(function (t) {
      return t.indexOf("_") < 0;  // an identifier counts by its parts
    }))).sort();
    return found.length > 0 && found.length <= NAME_TOKENS ? "~" + found.join("+") : null;
  }

  // The query's words (split at white space) with a kept token, each as its set of tokens, as
  // rootcause.site.search.query_words: an entry's score is scaled by the square of the share of
  // words it matches.
  function queryWords(text, kept, chunkTokens) {
    var out = [];
    (chunkTokens || String(text).split(/[ \t\n\r\f\v]+/).map(function (chunk) { return tokens(chunk); })).forEach(function (found) {
      var w = new Set(found.filter(function (t) { return kept.has(t); }));
      if (w.size) out.push(w);
    });
    return out;
  }

  // Each word's weight: the square of the rounded idf of its rarest token found
  // (rootcause.site.search.word_weights).
  function wordWeights(words, df, n) {
    return words.map(function (w) {
      var best = 0, found = false;
      Array.from(w).sort().forEach(function (t) {
        if (!df[t]) return;
        var idf = Math.floor(Math.log(1 + n / df[t]) * 1000 + 0.5) / 1000;
        if (!found || idf > best) { best = idf; found = true; }
      });
      return best * best;
    });
  }

  // Tokens plus neighbouring pairs, as rootcause.text.terms.
  function terms(text, stopwords) {
    var found = tokens(text, stopwords);
    var out = found.slice();
    for (var i = 0; i + 1 < found.length; i++) {
      var a = found[i], b = found[i + 1];  // a word is not paired with its own part
      if (a.lastIndexOf(b, 0) !== 0 && b.lastIndexOf(a, 0) !== 0) out.push(a + "+" + b);
    }
    return out;
  }

  function Index(base, manifestUrl, fetcher) {
    this.base = base;               // URL of the search/ folder, ending in "/"
    this.manifestUrl = manifestUrl;
    // The manifest keeps its name across builds, so it is revalidated; shards are content-hashed.
    this.fetch = fetcher || function (url, fresh) {
      return fetch(url, fresh ? { cache: "no-cache" } : {}).then(function (r) {
        if (!r.ok) throw new Error(url + ": " + r.status);
        return r.json();
      });
    };
    this.cache = Object.create(null);
    this.manifest = null;
  }

  Index.prototype.load = function (url, fresh) {
    if (!this.cache[url]) this.cache[url] = this.fetch(url, fresh);
    return this.cache[url];
  };

  Index.prototype.ready = function () {
    var self = this;
    if (!this.manifest) {
      this.manifest = this.load(this.manifestUrl, true).then(function (m) {
        STOPWORDS = new Set(m.stopwords);
        m.keys = decodeKeys(m.shards);  // the token shards' keys, sorted (search.py's manifest_file)
        return m;
      });
    }
    return this.manifest;
  };

  // The shard keys as the manifest writes them: each as how many characters it shares with the
  // one before (0-9, a-z) and the rest, separated by spaces (search.py's encode_keys).
  var DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz";
  function decodeKeys(text) {
    var keys = [], previous = "";
    (text ? text.split(" ") : []).forEach(function (item) {
      previous = previous.slice(0, DIGITS.indexOf(item[0])) + item.slice(1);
      keys.push(previous);
    });
    return keys;
  }

  // How many of the sorted keys are not after `token` (Python's bisect_right; tokens are ASCII).
  function keysUpTo(keys, token) {
    var lo = 0, hi = keys.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (token < keys[mid]) hi = mid; else lo = mid + 1;
    }
    return lo;
  }

  // The shard a token would be in: the last key not after it (search.py's shard_key).
  function shardKey(manifest, token) {
    var at = keysUpTo(manifest.keys, token) - 1;
    return at >= 0 ? manifest.keys[at] : null;
  }

  // A shard's address: its stable path, and the hash of the whole index so that a browser never
  // mixes two builds' shards (search.py's shard_path, doc_path and index_version).
  Index.prototype.shardUrl = function (manifest, key) { return this.base + "t/" + key + ".json?v=" + manifest.files; };
  Index.prototype.docUrl = function (manifest, n) { return this.base + "d/" + n + ".json?v=" + manifest.files; };

  // The shards holding the completions of the word being typed: its own, and those after it up to
  // the one where words stop starting with it, when they are at most `more` (search.py's prefix_keys).
  function prefixKeys(manifest, token, more) {
    var keys = manifest.keys;
    var first = keysUpTo(keys, token) - 1, last = keysUpTo(keys, token + "\x7f") - 1;
    return last - first <= more ? keys.slice(Math.max(first, 0), last + 1) : keys.slice(Math.max(first, 0), first + 1);
  }

  // The longer words of a shard that start with `token`, not pairs nor names (search.py's completions).
  function completions(shard, token) {
    return Object.keys(shard).sort().filter(function (other) {
      return other !== token && other.lastIndexOf(token, 0) === 0 && !/[+~]/.test(other);
    });
  }

  Index.prototype.shardKey = function (manifest, token) { return shardKey(manifest, token); };

  // Hits best first: [{id, title, summary, severity, category, score, matched, allWords}]; no cut-off.
  // For a short query, every entry that has all its words (of those the index knows) comes first,
  // then those that have some, each group by score. `prefix`: the last word of a short query is being
  // typed, its completions count too. As rootcause.site.search.SearchIndex.query, to the same order.
  // `progress(hits)`, when given: called with the first hits before the whole list is in (above).
  Index.prototype.query = function (text, limit, prefix, progress) {
    var self = this;
    limit = limit || 10;
    return this.ready().then(function (manifest) {
      // a pasted log line loses its decoration first (ANSI, carriage returns, quotes, rich boxes),
      // as rootcause.text.undecorate does for the matcher
      if (manifest.decoration) {
        var rules = manifest.rules || (manifest.rules = manifest.decoration.map(function (r) { return [new RegExp(r[0], "g"), r[1]]; }));
        text = text.split("\n").map(function (line) {
          rules.forEach(function (r) { line = line.replace(r[0], r[1]); });
          return line.replace(/[ \t\f\v]+$/, "");
        }).join("\n");
      }
      var constants = manifest.query, maxTerms = constants.max_terms;
      var query = tokens(text);
      // the word being typed: the last one, when the text ends in it ("cuda o" types no word), of a
      // query of a few words (a pasted line is not being typed)
      var split = text.split(/[ \t\n\r\f\v]+/);
      var chunkTokens = split.map(function (chunk) { return tokens(chunk); });  // (once: a pasted line is long)
      var chunks = split.filter(function (chunk, i) { return chunkTokens[i].length > 0; });
      var last = prefix && /[A-Za-z0-9_]$/.test(text) && chunks.length && chunks[chunks.length - 1] === split[split.length - 1] &&
        chunks.length <= constants.short_words ? query[query.length - 1] : null;
      // a pasted message can have dozens of words: the longest (most specific) ones decide, and
      // each costs a shard to fetch
      var unique = Array.from(new Set(query));
      if (unique.length > maxTerms) {
        var keepSet = new Set(unique.slice().sort(function (a, b) { return b.length - a.length; }).slice(0, maxTerms));
        if (last !== null) keepSet.add(last);
        unique = unique.filter(function (t) { return keepSet.has(t); });
      }
      if (!unique.length) return [];
      var kept = new Set(unique);
      var pairs = Array.from(new Set(terms(text).slice(query.length))).filter(function (pair) {
        var parts = pair.split("+");
        return kept.has(parts[0]) && kept.has(parts[1]);
      }).slice(0, maxTerms);
      unique = unique.concat(pairs);
      var name = nameKey(text);
      if (name !== null) unique.push(name);
      var keys = unique.map(function (t) { return shardKey(manifest, t); });
      if (last !== null) keys = keys.concat(prefixKeys(manifest, last, constants.prefix_shards));
      keys = Array.from(new Set(keys.filter(function (k) { return k !== null; })));
      return Promise.all(keys.map(function (k) { return self.load(self.shardUrl(manifest, k)); })).then(function (loaded) {
        var byKey = Object.create(null);
        keys.forEach(function (k, i) { byKey[k] = loaded[i]; });
        var words = queryWords(text, kept, chunkTokens);
        var scores = new Map(), matched = new Map(), covered = new Map();
        var df = Object.create(null);
        unique.forEach(function (token) {
          var reach = [];
          words.forEach(function (w, i) { if (token === name || w.has(token)) reach.push(i); });
          var best = new Map();  // each entry's score for this token: its best posting
          var key = shardKey(manifest, token);
          var own = key !== null && Object.prototype.hasOwnProperty.call(byKey[key], token) ? byKey[key][token] : null;
          var i;
          for (i = 0; own && i + 1 < own.length; i += 2) best.set(own[i], own[i + 1]);
          if (token === last && !(own && own.length === 0)) {  // (a word in most entries is not completed)
            prefixKeys(manifest, token, constants.prefix_shards).forEach(function (k) {
              var shard = byKey[k];
              completions(shard, token).forEach(function (other) {
                var postings = shard[other];
                for (var j = 0; j + 1 < postings.length; j += 2) {
                  var score = postings[j + 1] * constants.prefix_weight;
                  if (score > (best.get(postings[j]) || 0)) best.set(postings[j], score);
                }
              });
            });
          }
          df[token] = best.size;
          best.forEach(function (score, doc) {
            scores.set(doc, (scores.get(doc) || 0) + score);
            matched.set(doc, (matched.get(doc) || 0) + 1);
            if (!covered.has(doc)) covered.set(doc, new Set());
            reach.forEach(function (w) { covered.get(doc).add(w); });
          });
        });
        var weights = wordWeights(words, df, manifest.entries);
        var total = weights.reduce(function (a, b) { return a + b; }, 0) || 1;
        var ranked = Array.from(scores.keys()).map(function (doc) {
          var have = covered.get(doc);
          var share = Array.from(have).sort(function (a, b) { return a - b; })
            .reduce(function (sum, w) { return sum + weights[w]; }, 0) / total;
          var whole = weights.every(function (weight, w) { return weight === 0 || have.has(w); });
          return [doc, scores.get(doc) * (1 + matched.get(doc) / unique.length) * share * share, whole];
        });
        var short = chunks.length <= constants.short_words;
        ranked.sort(function (a, b) { return (short ? b[2] - a[2] : 0) || (b[1] - a[1]) || (a[0] - b[0]); });
        ranked = ranked.slice(0, limit);
        var per = manifest.docs_per_shard, fields = manifest.doc_fields;
        var needed = Array.from(new Set(ranked.map(function (r) { return Math.floor(r[0] / per); })));
        var byShard = Object.create(null), ready = 0;
        function hit(r) {
          var row = byShard[Math.floor(r[0] / per)][r[0] % per];
          var out = {};
          fields.forEach(function (field, i) { out[field] = row[i]; });
          out.score = r[1];
          out.matched = matched.get(r[0]);
          out.allWords = r[2];
          return out;
        }
        // doc shards are asked for best hit first; `progress` gets the hits whose rows are all
        // in, best first, each time that list grows, so a page can show the best answer while
        // the rows of the tenth are still on their way
        return Promise.all(needed.map(function (n) {
          return self.load(self.docUrl(manifest, n)).then(function (shard) {
            byShard[n] = shard;
            if (!progress) return;
            var upTo = ready;
            while (upTo < ranked.length && byShard[Math.floor(ranked[upTo][0] / per)]) upTo += 1;
            if (upTo > ready && upTo < ranked.length) { ready = upTo; progress(ranked.slice(0, upTo).map(hit)); }
          });
        })).then(function () { return ranked.map(hit); });
      });
    });
  };

  // -- showing a hit -----------------------------------------------------------------------------
  // What a results list marks: the query's tokens, and the word being typed as a prefix.
  function queryTerms(text, prefix) {
    var found = tokens(text);
    var last = prefix && /[A-Za-z0-9_]$/.test(text) && found.length ? found[found.length - 1] : null;
    return { tokens: new Set(found), prefix: last };
  }

  var CODE_SPAN = /(`+)([\s\S]+?)\1/g;
  var EMPHASIS = /(\*\*|\*)(?=\S)([\s\S]+?)\1|\[([^\]]*)\]\([^)]*\)/g;

  // Inline Markdown of a title as pieces [text, code]: code spans are kept as code, emphasis and
  // links lose their marks (as rootcause.text.plain), so no backtick or asterisk is shown.
  function inline(text) {
    var out = [], last = 0, m;
    text = String(text);
    function prose(part) {
      part = part.replace(EMPHASIS, function (all, mark, body, link) { return link !== undefined ? link : body; });
      if (part) out.push([part, false]);
    }
    CODE_SPAN.lastIndex = 0;
    while ((m = CODE_SPAN.exec(text)) !== null) {
      prose(text.slice(last, m.index));
      out.push([m[2].trim(), true]);
      last = m.index + m[0].length;
    }
    prose(text.slice(last));
    return out;
  }

  // Pieces {text, code, mark, span} of a title (markdown) or summary: the words whose tokens the query
  // has are marked. Rendered with text nodes only (site.js), so nothing here is parsed as HTML.
  function pieces(text, terms, markdown) {
    var out = [];
    var span = 0;  // which code span a piece belongs to (one <code> each)
    function push(piece, code, mark) {
      var prev = out[out.length - 1];
      if (prev && prev.code === code && prev.mark === mark && prev.span === span) prev.text += piece;
      else if (piece) out.push({ text: piece, code: code, mark: mark, span: span });
    }
    function hit(word) {
      var found = tokens(word);
      for (var i = 0; i < found.length; i++) {
        if (terms.tokens.has(found[i])) return true;
        if (terms.prefix && terms.prefix.length >= 2 && found[i].lastIndexOf(terms.prefix, 0) === 0) return true;
      }
      return false;
    }
    (markdown ? inline(text) : [[String(text), false]]).forEach(function (part) {
      var str = part[0], code = part[1], last = 0, m;
      span++;
      var word = /[A-Za-z0-9_]+(?:-[0-9]{1,3}(?![0-9A-Za-z]))?/g;
      while ((m = word.exec(str)) !== null) {
        push(str.slice(last, m.index), code, false);
        push(m[0], code, hit(m[0]));
        last = m.index + m[0].length;
      }
      push(str.slice(last), code, false);
    });
    return out;
  }

  var api = { tokens: tokens, terms: terms, nameKey: nameKey, queryTerms: queryTerms, inline: inline, pieces: pieces,
              decodeKeys: decodeKeys,
              Index: Index };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.RootcauseSearch = api;
})(typeof self !== "undefined" ? self : this);
