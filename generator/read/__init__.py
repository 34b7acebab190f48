"""Entries in: find the YAML files, read them with line marks, validate each against the entry
format and the content rules, and link them into one checked encyclopedia."""
