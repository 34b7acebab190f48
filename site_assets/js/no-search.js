/* The diagnose page may not connect anywhere, and the theme's search fetches its index. The
 * theme sets search up only when the page has a form named "search", so the form is taken out
 * before the theme's script runs: no blocked request, no dead search box. */
(function () {
  "use strict";
  document.querySelectorAll(".md-search, label.md-header__button[for='__search']")
    .forEach(function (node) { node.remove(); });
})();
