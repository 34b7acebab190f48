/* Building page content from text only, shared by the search box (search.js) and the diagnose
 * page (diagnose-ui.js): contributor and log text reaches the page as text nodes, never as
 * HTML. */
/* exported EncText */
self.EncText = (function () {
  "use strict";

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /* Contributor prose with `code spans`, as a paragraph of text nodes; `label` (optional)
   * starts it in bold. */
  function prose(cls, label, text) {
    var p = el("p", cls);
    if (label) p.appendChild(el("strong", null, label));
    text.split("`").forEach(function (part, n) {
      if (part) p.appendChild(n % 2 ? el("code", null, part) : document.createTextNode(part));
    });
    return p;
  }

  return { el: el, prose: prose };
})();
