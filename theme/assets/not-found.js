// The 404 page is served at any address, at whatever path the site really lives under: the
// configured sub-path when deployed, "/" at a domain root or under `rootcause serve`. Its
// stylesheets, icon and scripts are therefore not in the page's head but in an inert <template>
// (#rc-assets, written for the configured sub-path): this script, inlined in the head with its
// hash in the page's CSP, adds them under the path the site is really at, so that the browser
// requests only files that exist. Once the page is read, its links are moved there too, the
// page's script starts, and entries are suggested from the words of the missing address, or
// none when no entry shares a distinctive word with it.
(function () {
  "use strict";
  var base = document.documentElement.getAttribute("data-base") || "/";
  var root = location.pathname.indexOf(base) === 0 ? base : "/";
  var move = function (value) { return value && value.indexOf(base) === 0 ? root + value.slice(base.length) : value; };
  var later = [];
  var kept = document.getElementById("rc-assets");
  if (kept) {
    Array.prototype.forEach.call(kept.content.querySelectorAll("link, script"), function (old) {
      var fresh = document.createElement(old.tagName.toLowerCase());
      Array.prototype.forEach.call(old.attributes, function (a) {
        fresh.setAttribute(a.name, a.name === "href" || a.name === "src" ? move(a.value) : a.value);
      });
      if (fresh.tagName === "SCRIPT") {
        fresh.async = false;   // in order, as the parser would have run them
        if (old.hasAttribute("defer")) { fresh.removeAttribute("defer"); later.push(fresh); return; }
      }
      document.head.appendChild(fresh);
    });
  }

  // what a missing address says that no entry's words would: the address's own furniture
  var ignored = ["entries", "entry", "index", "html", "page", "pages", "such", "not", "found", "missing",
                 "the", "and", "for", "with", "from", "old", "new", "name", "www"];
  function wordsOf(text) { return text.toLowerCase().split(/[^a-z0-9]+/); }

  function suggest() {
    var data = document.getElementById("rc-entries");
    var list = document.getElementById("rc-suggest");
    if (!data || !list) return;
    var words = wordsOf(decodeURIComponent(location.pathname.slice(root.length)))
      .filter(function (w, i, all) { return w.length > 2 && ignored.indexOf(w) < 0 && all.indexOf(w) === i; });
    if (!words.length) return;
    // a word of an entry's id counts 2, a word of its title 1; an entry needs 2: one id word or
    // two title words in common (a single shared title word is chance)
    var scored = JSON.parse(data.textContent).map(function (e) {
      var id = e[0].split("-");
      var title = wordsOf(e[1]);
      var score = 0;
      words.forEach(function (w) { if (id.indexOf(w) >= 0) score += 2; else if (title.indexOf(w) >= 0) score += 1; });
      return [score, e];
    }).filter(function (s) { return s[0] >= 2; }).sort(function (a, b) { return b[0] - a[0]; }).slice(0, 5);
    if (!scored.length) return;
    scored.forEach(function (s) {
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = root + "entries/" + s[1][0] + "/";
      link.textContent = s[1][1];
      item.appendChild(link);
      list.appendChild(item);
    });
    document.getElementById("rc-suggestions").hidden = false;
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (root !== base) {
      document.querySelectorAll("a[href]").forEach(function (e) { e.setAttribute("href", move(e.getAttribute("href"))); });
      document.querySelectorAll("form[action]").forEach(function (e) { e.setAttribute("action", move(e.getAttribute("action"))); });
      document.querySelectorAll("[data-root]").forEach(function (e) { e.setAttribute("data-root", root); });
      document.querySelectorAll("[data-search]").forEach(function (e) { e.setAttribute("data-search", move(e.getAttribute("data-search"))); });
    }
    suggest();
    later.forEach(function (script) { document.head.appendChild(script); });
  });
})();
