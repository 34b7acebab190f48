"""The names the site itself owns. A category folder takes a top-level path of the site and an
entry id or alias a path inside its category's folder: one of these would replace a page the
site relies on (the diagnose page, whose promise is that a log never leaves the browser), or
lose its own pages. tests/test_build.py checks this list against every top-level name of a real
build, so a new page or export cannot be left out of it."""

from __future__ import annotations

# Top level: generated pages (render.py), hand-written pages and assets (site_assets/), exports
# (api/, schema/), the full-text index (fulltext.py), the theme's (assets/, search/, 404) and
# the site map.
TOP_LEVEL = frozenset(
    {
        "404",
        "api",
        "assets",
        "categories",
        "contributing",
        "css",
        "diagnose",
        "entry-format",
        "index",
        "js",
        "pagefind",
        "schema",
        "search",
        "severity",
        "sitemap",
        "tags",
    }
)
# Inside a category folder: its listing (`index`) and the listing's later pages (`page/N`).
IN_CATEGORY = frozenset({"index", "page"})


def category_problem(name: str) -> tuple[str, str] | None:
    """Why a category folder cannot have this name, with the fix; None when it can."""
    if name in TOP_LEVEL:
        return (
            f"category folder `{name}` takes the site's own `/{name}/`",
            "rename the folder (the site's own names are: " + ", ".join(sorted(TOP_LEVEL)) + ")",
        )
    return None


def entry_name_problem(name: str, what: str) -> tuple[str, str] | None:
    """Why an entry id or alias (`what`) cannot be this name, with the fix; None when it can."""
    if name in IN_CATEGORY:
        return (
            f"{what} `{name}` takes the category's own `{name}` page",
            "choose another name ("
            + " and ".join(f"`{n}`" for n in sorted(IN_CATEGORY))
            + " are the category listing's)",
        )
    return None
