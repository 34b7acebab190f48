"""Diagnose a log against the signature index: the Python half of one matcher semantics whose
JavaScript half is site_assets/js/diagnose-core.js. Both pass tests/diagnose_vectors/.

Semantics (both implementations):
- ANSI escape sequences are removed first. The log is split into segments at each CRLF, LF or
  CR (progress bars redraw with CR; a CRLF is one break). Line numbers count LFs, from 1.
- A segment longer than SEGMENT_BYTES bytes of UTF-8 is cut there (bounded memory).
- Text is normalised by lower-casing ASCII letters only and turning each run of spaces, tabs,
  form feeds and vertical tabs into one space. A signature is normalised the same way (and
  trimmed) and split on `*` into literal pieces; it matches a text when the pieces occur in it in
  order. No other character is special, so matching is linear in the log size.
- A signature matches at a segment when it matches the segment; or the segment joined by a space
  to the next one (a wrapped line) while not matching that next one alone.
- An entry is a candidate when one of its primary signatures matches. Its score is the sum of
  the weights of its distinct matched signatures (primary and context); its evidence is the
  first match of each, at most MAX_EVIDENCE: the earliest by line, matches on one line in the
  index's order of signatures (never in the order the scan happens to find them, which depends
  on the anchor each twin chose).
- A candidate that another candidate causes (`leads-to` / `often-caused-by`) is collateral,
  when that cause has a primary match on a line of its own.
- Tracebacks (frames.py) that an entry's `raised` rule names (the exception and a frame it
  passed through) make a primary match of that entry, with the rule's weight, its evidence the
  exception line; hits on one line sort after the signatures' hits.
- Metric lines (metrics.py) give sightings; each makes a primary match of the entries that
  list its signal, scored by metrics.SIGNAL_SCORES, its evidence the lines it rests on.
- Order: initiating before collateral, then confidence, then evidence from the rank torchrun
  names as the root cause first, then matches on printed text before those read from numbers
  alone, then higher score, then earlier first evidence, then id.

This module streams: memory is bounded by CHUNK_BYTES plus one segment, whatever the log size.
"""

from ..read.pattern import compiled, normalise, pieces
from .candidates import MAX_EVIDENCE
from .index import Index, Signature
from .results import Diagnosis, Evidence, Match, Streaming, confidence, diagnose, result
from .scanner import CHUNK_BYTES, SEGMENT_BYTES, Scanner, scan, strip_ansi

__all__ = [
    "CHUNK_BYTES",
    "MAX_EVIDENCE",
    "SEGMENT_BYTES",
    "Diagnosis",
    "Evidence",
    "Index",
    "Match",
    "Scanner",
    "Signature",
    "Streaming",
    "compiled",
    "confidence",
    "diagnose",
    "normalise",
    "pieces",
    "result",
    "scan",
    "strip_ansi",
]
