"""The plugin's options in mkdocs.yml (`plugins: - encyclopedia: ...`)."""

from __future__ import annotations

from mkdocs.config import base
from mkdocs.config import config_options as c


class EncyclopediaConfig(base.Config):  # type: ignore[no-untyped-call]
    entries_dir = c.Type(str, default="entries")
    """The folder that holds the category folders, relative to mkdocs.yml."""
    overrides_dir = c.Type(str, default="overrides/encyclopedia")
    """Templates here replace the generator's own of the same name."""
    edit_url = c.Optional(c.Type(str))
    """Where "Edit this entry" points; `{path}` is the entry's file, e.g. entries/memory/x.yaml."""
    full_text = c.Type(bool, default=True)
    """Index the built site with Pagefind for the search box (off: the box matches error
    signatures only)."""
