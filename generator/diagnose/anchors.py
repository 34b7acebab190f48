"""Where the matcher looks: for each signature, a word to find with the Aho-Corasick pass (its
anchor) and a guard, a regular expression over the raw lower-cased log that must match where the
anchor was found for the signature to match there. Only speed depends on the guard, never a
result: the anchor is a substring of every line the signature matches, and the guard accepts every
way the log's raw bytes can hold the signature's text from the anchor on (diagnose.py's semantics:
a space of the signature is a run of spaces, tabs, form feeds or vertical tabs in the log, or one
line break with such runs around it, where a wrapped line is joined to its neighbour).

A guard spares the full match on the lines that hold a common word but not the phrase: `loss`
with no non-finite value after it, `reserved` with no `memory` after it."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..read.pattern import NONFINITE_PREFIX, NONFINITE_WORDS, WORD_CHAR, Piece, Slot

# Words that fill ordinary training logs: a poor anchor, since every line holding the anchor
# is matched in full. (Only speed depends on this list, never the result.)
COMMON_WORDS = frozenset(
    {
        "memory",
        "allocate",
        "allocated",
        "reserved",
        "checkpoint",
        "checkpoints",
        "saving",
        "loading",
        "cuda",
        "nccl",
        "error",
        "warning",
        "model",
        "torch",
        "process",
        "rank",
        "step",
        "loss",
        "tensor",
        "device",
        "gpu",
        "size",
        "file",
        "line",
        "call",
        "failed",
        "training",
        "train",
        "running",
        "total",
        "free",
        "capacity",
        "found",
        "while",
        "with",
        "from",
        "module",  # every traceback frame: `module.py`, `<module>`
        "modules",  # every frame under torch/nn/modules/ (it anchored a PEFT signature)
        "processgroupnccl",  # every c10d log line names ProcessGroupNCCL.cpp
        "python",  # every traceback frame's path: `/python3.11/site-packages/`
        "warn",  # every NCCL warning line: `NCCL WARN ...`
    }
)


_PUNCTUATION = ".,:;()[]'\""


@functools.lru_cache(maxsize=65_536)  # tokens repeat across signatures: index start-up
def _rarity(token: str) -> int:
    """Higher for tokens unlikely in ordinary log lines: identifiers mixing letters with `_`,
    `.` or digits beat plain words; bare numbers and common words are worst."""
    bare = token.strip(_PUNCTUATION)
    letters = sum(c.isalpha() for c in bare)
    if letters == 0:
        return len(token) - 30
    score = len(token) + (6 if letters < len(bare) else 0)
    return score - (20 if bare in COMMON_WORDS else 0)


# A space of the signature, in the raw log: a run of blanks, or one line break with blanks around
# it (a wrapped line joined to the next). Zero blanks are accepted too: a superset costs nothing.
_SEP = r"[ \t\f\v]*(?:\r\n|\r|\n)?[ \t\f\v]*"
# `{nonfinite}` as pattern.py reads it: an optional `tensor(`, an optional sign, one of the
# words, and no word character after it.
_NONFINITE = (
    f"(?:{re.escape(NONFINITE_PREFIX)})?[-+]?(?:{'|'.join(NONFINITE_WORDS)})(?!{WORD_CHAR.pattern})"
)
GUARD_ATOMS = 4  # the anchor and at most this many atoms after it: enough to be selective


@dataclass(frozen=True)
class Anchor:
    word: str  # normalised text; every line the signature matches holds it
    guard: str | None  # a regular expression to match right after `word`; None: none needed


_Atom = tuple[str, str]  # ("word", text) | ("space", "") | ("nonfinite", "") | ("stop", "")


def _atoms(piece: Piece) -> list[_Atom]:
    atoms: list[_Atom] = []
    for token in piece:
        if isinstance(token, Slot):
            atoms.append(("nonfinite" if token.kind == "nonfinite" else "stop", ""))
            continue
        for i, word in enumerate(token.split(" ")):
            if i:
                atoms.append(("space", ""))
            if word:
                atoms.append(("word", word))
    return atoms


def _guard(atoms: list[_Atom]) -> str | None:
    """The regular expression for at most GUARD_ATOMS atoms after the first (the anchor word),
    to match right after it; None when nothing after it can be checked."""
    parts: list[str] = []
    checked = 0
    for kind, text in atoms:
        if kind == "stop" or checked > GUARD_ATOMS or kind == "word" and not text.isascii():
            break
        if kind == "space":
            if parts and parts[-1] != _SEP:
                parts.append(_SEP)
            continue
        parts.append(re.escape(text) if kind == "word" else _NONFINITE)
        checked += 1
    while parts and parts[-1] == _SEP:
        parts.pop()
    return "".join(parts[1:]) if checked > 1 else None


# What a guard is worth in choosing the anchor: a word with no guard sends every line that holds
# it to the full match, so a slightly more common word that can be guarded is the better anchor
# (`keyerror:` with `'eval_loss'` after it, not `'eval_loss'` alone, which every evaluation
# dict line holds). Short words (under _GUARD_MIN_LENGTH characters) get no bonus: `in` or `-m`
# would be found, and guarded, on almost every line.
_GUARD_BONUS = 8
_GUARD_MIN_LENGTH = 4


@functools.lru_cache(maxsize=100_000)  # the CLI builds an index twice (checked, then used)
def choose(parts: tuple[str, ...], compiled: tuple[Piece, ...]) -> Anchor:
    """Of a signature's literal pieces (diagnose.pieces), the run without spaces least likely to
    fill a log (a substring of every line the signature matches), preferring one a guard can
    follow, with that guard; of equals, the first. Only speed depends on the choice: every line
    the signature matches holds every such run. (The exported index names each signature's
    anchor and guard, and the browser's matcher, diagnose-core.js, uses them.)"""
    tokens = [t for p in parts for t in p.split(" ") if t]
    atoms = [_atoms(piece) for piece in compiled]
    best: tuple[tuple[int, int, int], Anchor] | None = None
    # Rarest first, so the guards of words that cannot win are never built (index start-up).
    for order, token in sorted(enumerate(tokens), key=lambda t: -_rarity(t[1])):
        if best is not None and (_rarity(token) + _GUARD_BONUS, 1, -order) < best[0]:
            continue
        found = _guarded(token, atoms)
        worth = (*_worth(found), -order)
        if best is None or worth > best[0]:
            best = (worth, found)
    return best[1] if best is not None else Anchor("", None)


def _worth(found: Anchor) -> tuple[int, int]:
    """How good an anchor `found` is: its rarity, with the bonus for a guard; on a tie the
    guarded word wins (it spares the full match where the phrase is not)."""
    rarity = _rarity(found.word)
    guarded = found.guard is not None and len(found.word.strip(_PUNCTUATION)) >= _GUARD_MIN_LENGTH
    return rarity + (_GUARD_BONUS if guarded else 0), int(guarded)


def _guarded(word: str, pieces: list[list[_Atom]]) -> Anchor:
    """`word` with the guard for what follows it: at each place the word has in the signature
    (`pieces`: each compiled piece's atoms), the atoms after it; None when one of those places
    has nothing after it that a guard can check (or the word is not ASCII: its bytes and its
    characters differ)."""
    guards: list[str] = []
    for atoms in pieces:
        for i, (kind, text) in enumerate(atoms):
            if kind == "word" and text == word:
                guard = _guard(atoms[i:])
                if guard is None:
                    return Anchor(word, None)
                guards.append(guard)
    if not guards:
        return Anchor(word, None)
    return Anchor(word, "|".join(f"(?:{g})" for g in sorted(set(guards))))
