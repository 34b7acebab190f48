"""The shipped entries' exports, written here when the package is built (setup.py) so that an
installed `encyclopedia` command works from any directory: see generator/terminal/sources.py."""
