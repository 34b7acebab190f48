"""What the preview server adds to every page it serves, for `mkdocs serve` only: live reload
under the site's Content-Security-Policy, and the banner that names broken entries.

MkDocs' server writes its reload poller into every page it serves as an inline script, which the
policy (csp.py) rightly blocks, so an open page never reloaded. While serving, the plugin has the
server write a `<script src>` to a file of the preview's own instead, with the page's epoch and
request id as data attributes; the file (allowed as `'self'`) runs the same long poll against the
server's `/livereload/<epoch>/<request>` endpoint. A built site has neither the file nor the tag.
The diagnose page may connect nowhere, so it does not reload itself: reload it by hand.

The problems banner is added as a page is served, not when it is built: an edit that breaks an
entry then shows on every open page after one reload, with no page rebuilt, and the site under it
stays as it last built. It is there only while the server runs with live reload (MkDocs calls the
hook only then; `make serve` does); the terminal names the problems either way.
"""

from __future__ import annotations

import html
import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..read.problems import Problem, counted

# Where the poller lives in the preview's site folder.
SCRIPT_PATH = "_preview/livereload.js"

# MkDocs' protocol: GET /livereload/<epoch>/<request> answers with the newest epoch once it is
# newer than <epoch> (or after a while, with the same one); a newer one means reload.
SCRIPT = """(function () {
  var me = document.currentScript;
  var epoch = parseFloat(me.dataset.epoch), request = me.dataset.request;
  var req, timeout;
  function poll() {
    req = new XMLHttpRequest();
    req.onloadend = function () {
      if (parseFloat(this.responseText) > epoch) {
        location.reload();
      } else {
        timeout = setTimeout(poll, this.status === 200 ? 0 : 3000);
      }
    };
    req.open("GET", "/livereload/" + epoch + "/" + request);
    req.send();
  }
  function stop() {
    if (req) req.abort();
    if (timeout) clearTimeout(timeout);
    req = timeout = undefined;
  }
  window.addEventListener("load", function () {
    if (document.visibilityState === "visible") poll();
  });
  document.addEventListener("visibilitychange", function () {
    document.visibilityState === "visible" ? poll() : stop();
  });
})();
"""

_requests = itertools.count(int(time.time() * 1000))


def tag(epoch: int) -> bytes:
    """The script element for one served page: a file, not inline code, so the policy runs it."""
    return b'<script src="/%s" data-epoch="%d" data-request="%d"></script>' % (
        SCRIPT_PATH.encode(),
        epoch,
        next(_requests),
    )


def problems_banner(problems: tuple[Problem, ...]) -> str:
    """The notice every served page shows while an entry is broken. Problems quote contributor
    text, so every line is HTML-escaped."""
    items = "".join(f"<li><code>{html.escape(str(p))}</code></li>" for p in problems)
    return (
        '<div class="admonition failure enc-problems" role="alert">'
        f'<p class="admonition-title">{counted(problems)}: '
        "this preview shows the last version that built; fix these and it reloads</p>"
        f"<ul>{items}</ul></div>"
    )


def _after(page: bytes, marker: bytes, insert: bytes) -> bytes | None:
    """`page` with `insert` right after the opening tag that starts with `marker`."""
    at = page.find(marker)
    if at < 0:
        return None
    end = page.index(b">", at) + 1
    return page[:end] + insert + page[end:]


def inject(content: bytes, epoch: int, problems: tuple[Problem, ...] = ()) -> bytes:
    """`content` (an HTML page) with the poller's tag before `</body>`, where MkDocs puts its
    inline script, and the problems banner (if any) at the top of the article."""
    at = content.rfind(b"</body>")
    at = len(content) if at < 0 else at
    content = content[:at] + tag(epoch) + content[at:]
    if not problems:
        return content
    banner = problems_banner(problems).encode()
    marked = _after(content, b"<article", banner) or _after(content, b"<body", banner)
    return marked or banner + content


def write_script(site_dir: Path) -> None:
    path = site_dir / SCRIPT_PATH
    if not path.is_file() or path.read_text(encoding="utf-8") != SCRIPT:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SCRIPT, encoding="utf-8")


def reload_browsers(server: Any) -> None:
    """Have every open page reload, as MkDocs' server does after a build, unless a build is
    under way (then its end reloads them). For the preview's second half, which writes pages
    after the build the server knows of has ended; a server without MkDocs' epochs is left as
    it is."""
    cond = getattr(server, "_epoch_cond", None)
    if cond is None or not hasattr(server, "_visible_epoch"):
        return
    with cond:
        if server._visible_epoch == server._wanted_epoch:
            now = max(round(time.monotonic() * 1000), server._visible_epoch + 1)
            server._visible_epoch = server._wanted_epoch = now
            cond.notify_all()


def install(server: Any, problems: Callable[[], tuple[Problem, ...]]) -> None:
    """Have MkDocs' live-reload server write the tag instead of its inline script, and the
    banner of the `problems` there are as each page is served. MkDocs calls
    `server._inject_js_into_html(content, epoch)` for every page it serves; a server without
    that hook (another MkDocs) is left as it is."""
    if callable(getattr(server, "_inject_js_into_html", None)):
        server._inject_js_into_html = lambda content, epoch: inject(content, epoch, problems())
