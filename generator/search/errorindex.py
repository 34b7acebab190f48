"""The signature index the search box runs the diagnose matcher on, split into shards so that
a query loads only the few shards its own words point to, however many entries there are.

Why a shard can be chosen from the query alone: a signature's literal pieces are substrings of
any text it matches. A *whole word* of a piece (a run of `[a-z0-9_]` after ASCII lower-casing,
with a non-word character of the piece on both sides) is therefore a whole word of that text
too; a word that meets a piece's edge is the start, the end or a part of one of the text's
words. Each signature is filed under one such key (`key`), in shard `fnv1a(key) % shards`; a
query needs only the shards of the keys its own words yield (`query_keys`), plus the few
signatures with no usable word (`loose`), which every query loads. The JavaScript half is
`site_assets/js/search-core.js` (`queryKeys`, `fnv1a`, `mayHold`); tests check that the two
agree and that a sharded search finds exactly what the whole index finds.

A query names far more keys than the index holds (every word of a traceback, every gram of
every word), so `meta.json` also carries a Bloom filter of the keys that are filed: a query
fetches only the shards of keys the filter may hold. A Bloom filter has no false negatives, so
nothing that could match is skipped; a false positive (about 1 in 100) costs one shard fetch.

Rows keep each signature's place in the whole index (`entry` order, `at` within the entry), so
the index a query assembles from its shards is the whole index with signatures that cannot
match left out, in the same order, and the matcher's result is the same. What a result shows
(title, link, quick answer, severity, category) is in separate card files, `c<n>.json` by a
hash of the entry id, fetched only for the entries that matched.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..diagnose.from_entries import causes, signatures
from ..diagnose.records import SignatureRecord
from ..read.link import Encyclopedia, Page
from ..read.pattern import ascii_lower, pieces
from ..read.text import shorten

ERRORS_DIR = "search/errors"
WORD = re.compile(r"[a-z0-9_]+")
MIN_WORD = 3  # shorter whole words ("to", "of") are in most queries: each would load a shard
GRAM = 4  # the shortest prefix, suffix or inner gram that files a signature
GRAM_MAX = 12  # and the longest: a longer key is rarer, so its shard holds fewer other rows
TARGET_BYTES = {"w": 6 * 1024, "g": 3 * 1024, "c": 8 * 1024}  # words, grams, cards
SUMMARY_CHARS = 200
BLOOM_BITS_PER_KEY = 10  # about 1% false positives with BLOOM_HASHES
BLOOM_HASHES = 7


def _words(signature: str) -> Iterator[tuple[str, bool, bool]]:
    """Each word run of each literal piece, with whether a non-word character of the piece
    bounds it on the left and on the right (a piece edge can meet any character of a text)."""
    for piece in pieces(signature):
        for match in WORD.finditer(piece):
            yield match.group(), match.start() > 0, match.end() < len(piece)


@functools.lru_cache(maxsize=100_000)
def key(signature: str) -> str | None:
    """The key a signature is filed under, chosen so that every text the signature matches
    yields it among `query_keys`. Cheapest kind first: its longest whole word ("w:"); else the
    start of a word ("p:", the text's word begins with it) or its end ("s:"); else a gram inside
    a word ("g:"), each cut to at most GRAM_MAX characters. Affix and gram keys are filed in
    the small gram shards, of which a query loads more. None: no word is long enough, and the
    signature is loose (every query loads it)."""
    whole, affix, inner = "", "", ""
    for word, left, right in _words(signature):
        if left and right:
            if len(word) >= MIN_WORD and len(word) > len(whole):
                whole = word
        elif len(word) < GRAM:
            continue
        elif left or right:
            candidate = ("p:" + word[:GRAM_MAX]) if left else ("s:" + word[-GRAM_MAX:])
            if len(candidate) > len(affix):
                affix = candidate
        elif len(word) > len(inner):
            inner = word
    if whole:
        return "w:" + whole
    if affix:
        return affix
    return "g:" + inner[:GRAM_MAX] if inner else None


def query_keys(text: str) -> set[str]:
    """Every key a signature matching `text` can be filed under (the JavaScript half builds
    the same set in search-core.js)."""
    keys: set[str] = set()
    for word in WORD.findall(ascii_lower(text)):
        keys.add("w:" + word)
        for size in range(GRAM, min(len(word), GRAM_MAX) + 1):
            keys.add("p:" + word[:size])
            keys.add("s:" + word[-size:])
            keys.update("g:" + word[i : i + size] for i in range(len(word) - size + 1))
    return keys


def fnv1a(key: str) -> int:
    """32-bit FNV-1a over the key's characters (ASCII by construction of WORD)."""
    value = 0x811C9DC5
    for char in key:
        value = ((value ^ ord(char)) * 0x01000193) & 0xFFFFFFFF
    return value


def bloom_bits(key: str, size: int) -> list[int]:
    """The filter bits of `key` (double hashing; search-core.js computes the same)."""
    first, step = fnv1a(key), fnv1a("#" + key) | 1
    return [(first + i * step) % size for i in range(BLOOM_HASHES)]


def bloom(keys: set[str]) -> dict[str, Any]:
    size = max(64, len(keys) * BLOOM_BITS_PER_KEY)
    bits = bytearray((size + 7) // 8)
    for found in keys:
        for bit in bloom_bits(found, size):
            bits[bit // 8] |= 1 << (bit % 8)
    return {"size": size, "bits": base64.b64encode(bytes(bits)).decode("ascii")}


@dataclass(frozen=True)
class Row:
    """One signature, where the whole index has it."""

    entry: int
    at: int
    signature: SignatureRecord  # as exports.signatures writes it


def _row(r: Row) -> list[Any]:
    """`[entry, at, text, weight, context]`, and the condition and symptom when it has them."""
    sig = r.signature
    row = [r.entry, r.at, sig["text"], sig["weight"], int(sig["context"])]
    extra = {k: sig[k] for k in ("when", "symptom") if k in sig}
    return row + [extra] if extra else row


def _card(page: Page, category_title: str) -> dict[str, Any]:
    return {
        "title": page.entry.title,
        "url": page.url,
        "severity": page.entry.severity,
        "category": category_title,
        "summary": shorten(page.entry.summary, SUMMARY_CHARS),
    }


def _shard(rows: list[Row], pages: list[Page]) -> dict[str, Any]:
    """The rows, each naming its entry by its place `n` in the whole index, and what the matcher
    needs of those entries: the id and the ids of the entries it causes."""
    return {
        "entries": {str(r.entry): [pages[r.entry].id, causes(pages[r.entry])] for r in rows},
        "signatures": [_row(r) for r in rows],
    }


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n"


def shard_count(total_bytes: int, target: int) -> int:
    """A power of two that keeps the average shard near `target` bytes."""
    count = 1
    while total_bytes / count > target and count < 4096:
        count *= 2
    return count


def _split(items: list[tuple[str, Any]], target: int, size: Any) -> list[list[Any]]:
    """Items filed by `fnv1a(key) % count`, `count` a power of two sized from the whole."""
    count = shard_count(size([item for _, item in items]), target)
    shards: list[list[Any]] = [[] for _ in range(count)]
    for found, item in items:
        shards[fnv1a(found) % count].append(item)
    return shards


def error_index(enc: Encyclopedia) -> dict[str, str]:
    """Site file name -> content: `meta.json` (shard counts and the loose signatures), the word
    shards `w<n>.json`, the gram shards `g<n>.json` and the cards `c<n>.json`."""
    pages = [p for p in enc.pages.values() if p.entry.status == "active"]
    titles = {c.slug: c.category.title for c in enc.categories}
    spaces: dict[str, list[tuple[str, Row]]] = {"w": [], "g": []}
    loose: list[Row] = []
    for n, page in enumerate(pages):
        for at, sig in enumerate(signatures(page)):
            found = key(sig["text"])
            if found is None:
                loose.append(Row(n, at, sig))
            else:
                # Whole words in the word shards; the rarer affix and gram keys, of which a
                # query names many more, in the small gram shards.
                spaces["w" if found.startswith("w:") else "g"].append((found, Row(n, at, sig)))
    files: dict[str, str] = {}
    counts: dict[str, int] = {}

    def rows_size(rows: list[Row]) -> int:
        return len(_json(_shard(rows, pages)).encode())

    for space, keyed in spaces.items():
        shards = _split(keyed, TARGET_BYTES[space], rows_size)
        counts[space] = len(shards)
        for n, rows in enumerate(shards):
            files[f"{ERRORS_DIR}/{space}{n}.json"] = _json(_shard(rows, pages))
    cards = [(p.id, p) for p in pages]

    def cards_size(chosen: list[Page]) -> int:
        return len(_json({p.id: _card(p, titles[p.category]) for p in chosen}).encode())

    card_shards = _split(cards, TARGET_BYTES["c"], cards_size)
    counts["c"] = len(card_shards)
    for n, chosen in enumerate(card_shards):
        files[f"{ERRORS_DIR}/c{n}.json"] = _json(
            {p.id: _card(p, titles[p.category]) for p in chosen}
        )
    keys = {found for keyed in spaces.values() for found, _ in keyed}
    meta = _shard(loose, pages)
    # The `raised` rules (frames.py) match whatever the query's words: every query gets them.
    raised = {
        str(n): [[r.exception, r.frame, r.function, r.weight] for r in page.entry.raised]
        for n, page in enumerate(pages)
        if page.entry.raised
    }
    meta["entries"].update({n: [pages[int(n)].id, causes(pages[int(n)])] for n in raised})
    files[f"{ERRORS_DIR}/meta.json"] = _json(
        {**meta, "raised": raised, "shards": counts, "bloom": bloom(keys)}
    )
    return files
