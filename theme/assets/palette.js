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
})();
