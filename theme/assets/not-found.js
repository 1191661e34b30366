// The 404 page is served at any address, at whatever path the site really lives under: the
// configured sub-path when deployed, "/" at a domain root or under `rootcause serve`. Its links
// are written for the configured sub-path; when the page is not under it, they are moved to "/"
// (the stylesheets and scripts too, which could not load), and entries are suggested from the
// words of the missing address. Inlined in the page with its hash in the page's CSP.
(function () {
  "use strict";
  var base = document.documentElement.getAttribute("data-base") || "/";
  var root = location.pathname.indexOf(base) === 0 ? base : "/";
  if (root !== base) {
    var move = function (value) { return value && value.indexOf(base) === 0 ? root + value.slice(base.length) : value; };
    document.querySelectorAll("link[href], a[href]").forEach(function (e) { e.setAttribute("href", move(e.getAttribute("href"))); });
    document.querySelectorAll("form[action]").forEach(function (e) { e.setAttribute("action", move(e.getAttribute("action"))); });
    document.querySelectorAll("[data-root]").forEach(function (e) { e.setAttribute("data-root", root); });
    document.querySelectorAll("[data-search]").forEach(function (e) { e.setAttribute("data-search", move(e.getAttribute("data-search"))); });
    document.querySelectorAll("script[src]").forEach(function (old) {
      var fresh = document.createElement("script");
      fresh.src = move(old.getAttribute("src"));
      old.parentNode.replaceChild(fresh, old);
    });
  }
  var data = document.getElementById("rc-entries");
  var list = document.getElementById("rc-suggest");
  if (!data || !list) return;
  var entries = JSON.parse(data.textContent);
  var words = decodeURIComponent(location.pathname.slice(root.length)).toLowerCase().split(/[^a-z0-9]+/)
    .filter(function (w) { return w.length > 2 && ["entries", "index", "html"].indexOf(w) < 0; });
  var scored = entries.map(function (e) {
    var text = (e[0] + " " + e[1]).toLowerCase();
    var score = 0;
    words.forEach(function (w) { if (e[0].split("-").indexOf(w) >= 0) score += 2; else if (text.indexOf(w) >= 0) score += 1; });
    return [score, e];
  }).filter(function (s) { return s[0] > 0; }).sort(function (a, b) { return b[0] - a[0]; }).slice(0, 5);
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
})();
