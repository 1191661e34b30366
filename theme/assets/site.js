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

  // -- boxes that scroll sideways: a code block keeps each line whole (an identifier is never cut in
  // two) and scrolls instead, so the one that overflows becomes a tab stop (a keyboard can scroll
  // it); the section tabs of a phone scroll too, faded at the edge while more of them lie beyond.
  var tabs = document.querySelector(".rc-tabs");
  var markOverflow = function () {
    document.querySelectorAll(".md-typeset pre > code").forEach(function (box) {
      if (box.scrollWidth > box.clientWidth + 1) {
        if (!box.hasAttribute("tabindex")) { box.setAttribute("tabindex", "0"); box.setAttribute("data-rc-scroll", ""); }
      } else if (box.hasAttribute("data-rc-scroll")) {
        box.removeAttribute("tabindex");
        box.removeAttribute("data-rc-scroll");
      }
    });
    if (tabs) tabs.classList.toggle("rc-tabs--more", tabs.scrollLeft + tabs.clientWidth < tabs.scrollWidth - 2);
  };
  if (tabs) {
    var current = tabs.querySelector("[aria-current]");
    if (current && current.offsetLeft + current.offsetWidth > tabs.clientWidth) tabs.scrollLeft = current.offsetLeft - 16;
    tabs.addEventListener("scroll", markOverflow, { passive: true });
  }
  markOverflow();
  window.addEventListener("resize", markOverflow);
  document.addEventListener("toggle", markOverflow, true);   // a log shown by opening its <details>

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

  // -- the frequency page: its tables' rows filtered by the words typed (in the failure's name, its
  // entry's title or the threads' names) and by whether an entry explains it; a table with no row
  // left is hidden with its heading. Without JS every row shows.
  var rowFilter = document.querySelector("[data-row-filter]");
  if (rowFilter) {
    rowFilter.hidden = false;
    var freqRows = Array.prototype.slice.call(document.querySelectorAll(".rc-rows tbody tr"));
    var rowText = freqRows.map(function (row) { return (row.getAttribute("data-failure") + " " + row.textContent).toLowerCase(); });
    var filterRows = function () {
      var wanted = rowFilter.elements.q.value.toLowerCase().split(/\s+/).filter(Boolean);
      var entry = rowFilter.elements.entry.value;
      var shown = 0;
      freqRows.forEach(function (row, n) {
        var ok = (!entry || row.getAttribute("data-entry") === entry)
          && wanted.every(function (word) { return rowText[n].indexOf(word) >= 0; });
        row.hidden = !ok;
        if (ok) shown += 1;
      });
      document.querySelectorAll(".rc-rows").forEach(function (group) {
        group.hidden = !group.querySelector("tbody tr:not([hidden])");
      });
      rowFilter.querySelector("output").textContent = shown === freqRows.length ? "" : shown + " of " + freqRows.length + " rows";
    };
    rowFilter.addEventListener("input", filterRows);
    rowFilter.addEventListener("change", filterRows);
    rowFilter.addEventListener("submit", function (event) { event.preventDefault(); });
    filterRows();
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

  // Text with the query's words in <mark> and code spans in <code>, from text nodes only: a
  // title or summary is never parsed as HTML.
  function fill(parent, pieces) {
    var code = null, span = -1;
    pieces.forEach(function (piece) {
      var node = document.createTextNode(piece.text);
      if (piece.mark) { var mark = document.createElement("mark"); mark.appendChild(node); node = mark; }
      if (!piece.code) { code = null; parent.appendChild(node); return; }
      if (!code || span !== piece.span) {  // one <code> per code span, holding its marks
        code = document.createElement("code");
        span = piece.span;
        parent.appendChild(code);
      }
      code.appendChild(node);
    });
  }

  function resultItem(api, hit, terms, idPrefix, n, option) {
    var a = document.createElement("a");
    a.href = rootPath + "entries/" + hit.id + "/";
    a.className = "rc-result";
    a.id = idPrefix + n;
    if (option) {  // in the header's listbox; the pages list plain links
      a.setAttribute("role", "option");
      a.setAttribute("aria-selected", "false");
      a.tabIndex = -1;
    }
    var title = document.createElement("span");
    title.className = "rc-result__title";
    fill(title, api.pieces(hit.title, terms, true));
    var summary = document.createElement("span");
    summary.className = "rc-result__summary";
    fill(summary, api.pieces(hit.summary, terms, false));
    a.appendChild(title);
    a.appendChild(summary);
    return a;
  }

  // The header's box is a combobox: its listbox of results (options) pops up under it, arrow keys
  // move the active option (aria-activedescendant), Enter opens it, Escape closes the list. The
  // search and home pages list results as plain links under their box.
  function attachSearch(input, results, options) {
    var active = -1;
    var serial = 0;
    var panel = options.dropdown ? results.parentNode : results;
    var note = null, all = null;
    if (options.dropdown) {
      note = panel.querySelector(".rc-result--none");
      all = panel.querySelector(".rc-search__all");
    }
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
    function open() {
      if (!options.dropdown) return;
      panel.hidden = false;
      input.setAttribute("aria-expanded", results.hidden ? "false" : "true");
    }
    function close() {
      if (options.dropdown) { panel.hidden = true; input.setAttribute("aria-expanded", "false"); }
      active = -1;
      input.removeAttribute("aria-activedescendant");
      items().forEach(function (el) {   // as setActive marks: the class always, aria-selected on options only
        el.classList.remove("rc-active");
        if (options.dropdown) el.setAttribute("aria-selected", "false");
      });
    }
    function say(text) {  // a message instead of results: outside the listbox, which holds options only
      if (options.dropdown) { note.textContent = text; note.hidden = !text; }
      else if (text) {
        var none = document.createElement("p");
        none.className = "rc-result--none";
        none.textContent = text;
        results.appendChild(none);
      }
    }
    var limit = options.limit;
    function run(event) {
      var text = input.value;
      var mine = ++serial;
      if (event) limit = options.limit;  // a new query starts with one page of results
      if (options.onQuery) options.onQuery(text);
      if (!text.trim()) { results.textContent = ""; results.removeAttribute("aria-busy"); close(); return; }
      var shown = -1, api, terms;
      // The old list stays until the new one has its best hit; then hits are added best first as
      // their rows arrive (aria-busy while the rest are on their way).
      function show(hits) {
        if (shown < 0) {
          api = window.RootcauseSearch;
          terms = api.queryTerms(text, true);
          results.textContent = "";
          active = -1;
          input.removeAttribute("aria-activedescendant");
          if (options.dropdown) say("");
          shown = 0;
        }
        for (; shown < hits.length; shown += 1) {
          results.appendChild(resultItem(api, hits[shown], terms, input.id + "-r", shown, options.dropdown));
        }
        if (options.dropdown && hits.length) { results.hidden = false; open(); }
      }
      index().then(function (idx) {
        return idx.query(text, limit, true, function (first) {
          if (mine !== serial) return;
          results.setAttribute("aria-busy", "true");
          show(first);
        });
      }).then(function (hits) {
        if (mine !== serial) return;  // a newer keystroke won
        show(hits);
        results.setAttribute("aria-busy", "false");
        if (!hits.length) say("No entry matches. Try other words, or paste the whole log into Diagnose.");
        if (options.dropdown) {
          results.hidden = !hits.length;  // an empty listbox is not shown
          all.href = rootPath + "search/?q=" + encodeURIComponent(text);
          all.textContent = "All results for \u201c" + (text.length > 40 ? text.slice(0, 40) + "\u2026" : text) + "\u201d";
          open();
        }
        if (options.more && hits.length === limit) {
          // each page of results costs the entries' summaries: fetch more only when asked
          var more = document.createElement("button");
          more.type = "button";
          more.className = "md-button rc-more";
          more.textContent = "Show more results";
          more.addEventListener("click", function () { limit += options.limit; run(); });
          results.appendChild(more);
        }
      }).catch(function (error) {
        results.textContent = "";
        say("Search is unavailable: " + error.message);
        open();
      });
    }
    input.addEventListener("input", run);
    if (options.dropdown) {
      input.addEventListener("keydown", function (event) {
        var shown = !panel.hidden;
        if (event.key === "ArrowDown") { event.preventDefault(); if (!shown && input.value.trim()) open(); setActive(active + 1); }
        else if (event.key === "ArrowUp") { event.preventDefault(); setActive(active - 1); }
        else if (event.key === "Escape") { if (shown) { event.preventDefault(); close(); } }
        else if (event.key === "Enter" && active >= 0 && shown) { event.preventDefault(); items()[active].click(); }
      });
      document.addEventListener("click", function (event) { if (!input.form.contains(event.target)) close(); });
      input.addEventListener("focus", function () { index(); if (input.value.trim() && (results.childNodes.length || !note.hidden)) open(); });
    } else {   // the pages' plain list of links: the arrow keys mark one (rc-active), Enter follows it
      input.addEventListener("keydown", function (event) {
        if (event.key === "ArrowDown") { event.preventDefault(); setActive(active + 1); }
        else if (event.key === "ArrowUp") { event.preventDefault(); setActive(active - 1); }
        else if (event.key === "Enter" && active >= 0 && items()[active]) { event.preventDefault(); items()[active].click(); }
      });
    }
    return run;
  }

  var header = document.getElementById("rc-q");
  if (header) attachSearch(header, document.getElementById("rc-results"), { dropdown: true, limit: 8 });

  var pageInput = document.getElementById("rc-page-q");
  if (pageInput) {
    // The address follows the query once typing pauses, not on every key: each replaceState is
    // a same-document navigation that makes the browser fetch the favicon again, on the path of
    // the keystroke's own shard requests. Leaving or blurring the box writes it at once.
    var addressTimer = null;
    var writeAddress = function () {
      clearTimeout(addressTimer);
      addressTimer = null;
      var url = new URL(window.location.href);
      var text = pageInput.value;
      if (text) url.searchParams.set("q", text); else url.searchParams.delete("q");
      if (url.toString() !== window.location.href) history.replaceState(null, "", url.toString());
    };
    var run = attachSearch(pageInput, document.getElementById("rc-page-results"), {
      dropdown: false,
      limit: 10,
      more: true,
      onQuery: function () { clearTimeout(addressTimer); addressTimer = setTimeout(writeAddress, 400); }
    });
    pageInput.addEventListener("blur", writeAddress);
    window.addEventListener("pagehide", writeAddress);
    var initial = new URL(window.location.href).searchParams.get("q");
    if (initial) { pageInput.value = initial; run(); }
    // the page is for searching: its script and manifest load now, not at the first key (a
    // failure shows at the first query, which asks again)
    else index().then(function (idx) { return idx.ready(); }).catch(function () { searchIndex = null; });
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
