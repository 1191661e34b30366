// Runs in <head> before the page paints, so the chosen colour scheme shows without a flash.
// "auto" follows the operating system; "light" and "dark" are the user's explicit choice.
(function () {
  var stored = null;
  try { stored = localStorage.getItem("rootcause.scheme"); } catch (e) { /* storage disabled */ }
  var choice = stored === "light" || stored === "dark" ? stored : "auto";
  var dark = choice === "dark" || (choice === "auto" && window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches);
  document.documentElement.className = "js";
  document.documentElement.setAttribute("data-rc-scheme", choice);
  document.documentElement.setAttribute("data-rc-dark", dark ? "1" : "0");
  // Material's palette keys on <body data-md-color-scheme>, and <body> does not exist yet. Set it as
  // soon as the parser creates it: a mutation callback runs before the first paint, whereas the
  // deferred site.js runs only after the whole page is parsed (a dark page would paint light first).
  function paint() {
    if (!document.body) return false;
    document.body.setAttribute("data-md-color-scheme", dark ? "slate" : "default");
    return true;
  }
  if (!paint() && window.MutationObserver) {
    var observer = new MutationObserver(function () { if (paint()) observer.disconnect(); });
    observer.observe(document.documentElement, { childList: true });
  }
})();
