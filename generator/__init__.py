"""The ML training failure encyclopedia's generator: load, validate, link, render and export the
entries, diagnose logs against their signatures, the MkDocs plugin and the `encyclopedia` CLI."""
