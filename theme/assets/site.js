// Page behaviour: colour scheme toggle, copy buttons, and search as you type (search.js is
// fetched on first use). Everything here is progressive: without JavaScript the pages read fine.
(function () {
  "use strict";
  var html = document.documentElement;
  var body = document.body;
  var rootPath = body.getAttribute("data-root") || "./";

  // -- colour scheme ----------------------------------------------------------------------------
  var media = window.matchMedia ? matchMedia("(prefers-color-scheme: dark)") : null;
  function applyScheme(choice) {
    var dark = choice === "dark" || (choice === "auto" && media && media.matches);
    html.setAttribute("data-rc-scheme", choice);
    body.setAttribute("data-md-color-scheme", dark ? "slate" : "default");
    var button = document.querySelector(".rc-palette");
    if (button) button.setAttribute("aria-label", "Colour scheme: " + (choice === "auto" ? "automatic" : choice) + " (change)");
  }
  applyScheme(html.getAttribute("data-rc-scheme") || "auto");
  if (media && media.addEventListener) media.addEventListener("change", function () { applyScheme(html.getAttribute("data-rc-scheme")); });
  var toggle = document.querySelector(".rc-palette");
  if (toggle) {
    toggle.hidden = false;
    toggle.addEventListener("click", function () {
      var order = ["auto", "light", "dark"];
      var next = order[(order.indexOf(html.getAttribute("data-rc-scheme")) + 1) % order.length];
      try { localStorage.setItem("rootcause.scheme", next); } catch (e) { /* storage disabled */ }
      applyScheme(next);
    });
  }

  // -- copy buttons -------------------------------------------------------------------------------
  document.querySelectorAll("[data-copy]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      var code = button.parentNode.querySelector("code");
      var text = code ? code.textContent : "";
      var done = function () {
        button.classList.add("rc-copied");
        button.setAttribute("title", "Copied");
        setTimeout(function () { button.classList.remove("rc-copied"); button.removeAttribute("title"); }, 1500);
      };
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).then(done, function () {});
    });
  });

  // -- the entries index: filter by system, category, severity and phase (a plain list without JS).
  // The choice is kept in the address (?system=pytorch&phase=launch), so a filtered view can be linked.
  var filter = document.querySelector("[data-filter]");
  if (filter) {
    filter.hidden = false;
    var cards = Array.prototype.slice.call(document.querySelectorAll(".rc-cards > .rc-card"));
    var selects = Array.prototype.slice.call(filter.querySelectorAll("select"));
    var reset = filter.querySelector("[data-filter-reset]");
    var apply = function (remember) {
      var wanted = {};
      selects.forEach(function (select) { if (select.value) wanted[select.name] = select.value; });
      var shown = 0;
      cards.forEach(function (card) {
        var ok = Object.keys(wanted).every(function (field) {
          return (card.getAttribute("data-" + field) || "").split(" ").indexOf(wanted[field]) >= 0;
        });
        card.hidden = !ok;
        if (ok) shown += 1;
      });
      document.querySelectorAll(".rc-severity-group").forEach(function (group) {
        group.hidden = !group.querySelector(".rc-card:not([hidden])");
      });
      filter.querySelector("output").textContent = shown + " of " + cards.length + " entries";
      if (reset) reset.hidden = !Object.keys(wanted).length;
      if (remember) {
        var url = new URL(window.location.href);
        selects.forEach(function (select) {
          if (select.value) url.searchParams.set(select.name, select.value); else url.searchParams.delete(select.name);
        });
        history.replaceState(null, "", url.toString());
      }
    };
    var params = new URL(window.location.href).searchParams;
    selects.forEach(function (select) {
      var value = params.get(select.name);
      var known = Array.prototype.some.call(select.options, function (option) { return option.value === value; });
      if (value && known) select.value = value;
    });
    filter.addEventListener("change", function () { apply(true); });
    filter.addEventListener("submit", function (event) { event.preventDefault(); });
    if (reset) reset.addEventListener("click", function () {
      selects.forEach(function (select) { select.value = ""; });
      apply(true);
      selects[0].focus();
    });
    apply(false);
  }

  // -- search -------------------------------------------------------------------------------------
  var searchIndex = null;
  function index() {
    if (searchIndex) return searchIndex;
    searchIndex = new Promise(function (resolve, reject) {
      var script = document.createElement("script");
      script.src = body.getAttribute("data-search");
      script.onload = function () {
        var manifest = body.getAttribute("data-manifest");
        resolve(new window.RootcauseSearch.Index(rootPath + "search/", rootPath + manifest));
      };
      script.onerror = reject;
      document.head.appendChild(script);
    });
    return searchIndex;
  }

  // the diagnose page asks the same index for entries related to an unexplained error
  window.RootcauseSite = { searchIndex: index };

  function resultItem(hit, idPrefix, n, inListbox) {
    var a = document.createElement("a");
    a.href = rootPath + "entries/" + hit.id + "/";
    a.className = "rc-result";
    a.id = idPrefix + n;
    if (inListbox) a.setAttribute("role", "option");  // only inside a listbox (the header's dropdown)
    var title = document.createElement("span");
    title.className = "rc-result__title";
    title.textContent = hit.title;
    var summary = document.createElement("span");
    summary.className = "rc-result__summary";
    summary.textContent = hit.summary;
    a.appendChild(title);
    a.appendChild(summary);
    return a;
  }

  function attachSearch(input, results, options) {
    var active = -1;
    var serial = 0;
    function items() { return results.querySelectorAll(".rc-result"); }
    function setActive(n) {
      var list = items();
      if (!list.length) return;
      active = (n + list.length) % list.length;
      list.forEach(function (el, i) {
        el.classList.toggle("rc-active", i === active);
        if (options.dropdown) el.setAttribute("aria-selected", i === active ? "true" : "false");  // options only
      });
      input.setAttribute("aria-activedescendant", list[active].id);
      list[active].scrollIntoView({ block: "nearest" });
    }
    function close() {
      if (options.dropdown) { results.hidden = true; input.setAttribute("aria-expanded", "false"); }
      active = -1;
      input.removeAttribute("aria-activedescendant");
    }
    var limit = options.limit;
    function run(event) {
      var text = input.value;
      var mine = ++serial;
      if (event) limit = options.limit;  // a new query starts with one page of results
      if (options.onQuery) options.onQuery(text);
      if (!text.trim()) { results.textContent = ""; close(); return; }
      index().then(function (idx) { return idx.query(text, limit, true); }).then(function (hits) {
        if (mine !== serial) return;  // a newer keystroke won
        results.textContent = "";
        active = -1;
        input.removeAttribute("aria-activedescendant");  // the old options are gone
        if (!hits.length) {
          var none = document.createElement("p");
          none.className = "rc-result--none";
          if (options.dropdown) { none.setAttribute("role", "option"); none.setAttribute("aria-disabled", "true"); }  // a listbox holds options only
          none.textContent = "No entry matches. Try fewer words, or paste the whole log into Diagnose.";
          results.appendChild(none);
        }
        hits.forEach(function (hit, n) { results.appendChild(resultItem(hit, input.id + "-r", n, options.dropdown)); });
        if (options.more && hits.length === limit) {
          // each page of results costs the entries' summaries: fetch more only when asked
          var more = document.createElement("button");
          more.type = "button";
          more.className = "md-button rc-more";
          more.textContent = "Show more results";
          more.addEventListener("click", function () { limit += options.limit; run(); });
          results.appendChild(more);
        }
        if (options.dropdown) { results.hidden = false; input.setAttribute("aria-expanded", "true"); }
      }).catch(function (error) {
        results.textContent = "Search is unavailable: " + error.message;
      });
    }
    input.addEventListener("input", run);
    input.addEventListener("keydown", function (event) {
      if (event.key === "ArrowDown") { event.preventDefault(); setActive(active + 1); }
      else if (event.key === "ArrowUp") { event.preventDefault(); setActive(active - 1); }
      else if (event.key === "Escape") { close(); }
      else if (event.key === "Enter" && active >= 0) { event.preventDefault(); items()[active].click(); }
    });
    if (options.dropdown) {
      document.addEventListener("click", function (event) { if (!input.form.contains(event.target)) close(); });
      input.addEventListener("focus", function () { index(); if (input.value.trim() && results.childNodes.length) { results.hidden = false; } });
    }
    return run;
  }

  var header = document.getElementById("rc-q");
  if (header) attachSearch(header, document.getElementById("rc-results"), { dropdown: true, limit: 8 });

  var pageInput = document.getElementById("rc-page-q");
  if (pageInput) {
    var run = attachSearch(pageInput, document.getElementById("rc-page-results"), {
      dropdown: false,
      limit: 10,
      more: true,
      onQuery: function (text) {
        var url = new URL(window.location.href);
        if (text) url.searchParams.set("q", text); else url.searchParams.delete("q");
        history.replaceState(null, "", url.toString());
      }
    });
    var initial = new URL(window.location.href).searchParams.get("q");
    if (initial) { pageInput.value = initial; run(); }
    pageInput.focus();
  }
  var homeInput = document.getElementById("rc-home-q");
  if (homeInput) {
    var homeResults = document.createElement("div");
    homeResults.className = "rc-page-results";
    homeResults.id = "rc-home-results";
    homeInput.form.after(homeResults);
    attachSearch(homeInput, homeResults, { dropdown: false, limit: 10 });
  }
})();
