"""Ranking for described queries: what a reader types in their own words ("loss is nan when fine
tuning", "GPU memory keeps growing", "显存不足") against each entry's title, phrases, tags,
symptom rows and quick answer. The signature index finds pasted error text; this finds the rest.

The index is built here, once, from the exported entry records; the search box
(site_assets/js/describe-core.js) reads the same index and only tokenises and scores the query,
with the same steps in the same order, so both halves rank alike (tests/search/describe_vectors).
The word lists the query steps need (stop words, synonyms) travel in the index: one source.

Scoring is BM25-like: each query term adds its rarity (idf) times how strongly the entry holds it
(field-weighted, saturated); a query that holds every word of one of the entry's phrases (or its
title) earns a bonus. A query word no entry holds is read as the entry word nearest to it (one
edit away, two for long words: "memroy" is "memory"), and the last word, which the reader may
still be typing, as the commonest entry word it begins ("timeo" is "timeout"), before synonyms
and stems: so a typo inside "out of memroy" still finds the OOM page."""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# ASCII words, and runs of Chinese, Japanese or Korean characters (split into bigrams below).
TOKEN = re.compile(
    r"[a-z0-9]+(?:_[a-z0-9]+)*|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+"
)
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")

# Words that say nothing about which failure it is. Not "not", "no", "without": "loss not
# decreasing" and "no gpu" need them.
_STOP_TEXT = (
    "a an the to of in on for with and or is are was were be been being i my me we our "
    "you your it its this that these those when while after before during use using used "
    "how what why which who can could would should will get gets got getting does do did "
    "doing has have had from at by as so but if then there some any t s please help issue "
    "problem question bug about into via vs also just only still very much many one out "
    "fix solve work"
)
STOP_WORDS = tuple(_STOP_TEXT.split())

# Spellings of one thing, to one form (applied to words, longest first, before stop words and
# stemming). "out of memory" keeps "memory" beside "oom": a reader may type either.
SYNONYMS: tuple[tuple[str, str], ...] = (
    ("out of memory", "oom memory"),
    ("outofmemory", "oom memory"),
    ("oom", "oom memory"),
    ("outofmemoryerror", "oom memory"),
    ("fine tuning", "finetune"),
    ("fine tuned", "finetune"),
    ("fine tune", "finetune"),
    ("finetuning", "finetune"),
    ("finetuned", "finetune"),
    ("finetunes", "finetune"),
    ("all reduce", "allreduce"),
    ("all gather", "allgather"),
    ("reduce scatter", "reducescatter"),
    ("not a number", "nan"),
    ("nans", "nan"),
    ("infs", "inf"),
    ("data loader", "dataloader"),
    ("check point", "checkpoint"),
    ("check points", "checkpoint"),
    ("multi gpu", "multigpu"),
    ("multi node", "multinode"),
    ("hugging face", "huggingface"),
    ("hf", "huggingface"),
    ("seg fault", "segfault"),
    ("segmentation fault", "segfault"),
    ("state dict", "statedict"),
    ("state_dict", "statedict"),
    ("grad norm", "gradnorm"),
    ("learning rate", "lr"),
    ("torch compile", "torchcompile"),
    ("flash attention", "flashattention"),
    ("flash attn", "flashattention"),
    ("flash_attn", "flashattention"),
    ("hangs", "hang"),
    ("hanging", "hang"),
    ("hung", "hang"),
    ("stuck", "hang"),
    ("freezes", "hang"),
    ("frozen", "hang"),
    ("freeze", "hang"),
    ("slower", "slow"),
    ("slowly", "slow"),
)

FIELD_WEIGHTS = (
    ("title", 1.5),
    ("phrases", 2.0),
    ("tags", 0.5),
    ("symptoms", 0.5),
    ("summary", 0.5),
    ("affects", 0.5),
)
FIELD_TF_CAP = 2  # occurrences of a term counted per field: a word said five times is no likelier
SATURATION = 8.0  # BM25's k1: how fast a term's weight in an entry stops growing
# A phrase bonus: this times the idf of the phrase words the query holds, times the share held,
# squared.
PHRASE_BONUS = 1.5
TYPO_MIN = 5  # words shorter than this are taken as typed (too many short words are one edit apart)
TYPO_TWO = 8  # words this long may be two edits from the word meant
PREFIX_MIN = 3  # the shortest unfinished last word that is completed
# The canonical page of a family is the one other pages point to: each entry's score gains this
# times the log of how many entries link to it, so "illegal memory access" brings the general
# page before the FlashAttention case of it.
PRIOR = 1.0
TITLE_BONUS = 5.0  # PHRASE_BONUS for the title: a query that names the page's title is about it
MIN_SCORE = 3.0  # below this, a result is a coincidence of common words
RELATIVE_FLOOR = 0.25  # results under this share of the best score are dropped
DIGITS = 4  # index numbers are rounded, so both halves add the same values
# A slip of the finger hits a neighbouring key: a letter typed for another counts as one edit
# when the two are neighbours on a QWERTY keyboard, else as two (a deletion and an insertion),
# so that a word of one edit's limit that no entry holds ("matter", "remain") is not read as a
# near one ("master", "retain"). Each letter's neighbours: its row, and the rows above and below
# it as they are staggered.
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _neighbours() -> dict[str, str]:
    out = {}
    for r, row in enumerate(_ROWS):
        for c, key in enumerate(row):
            near = [(r, c - 1), (r, c + 1), (r - 1, c), (r - 1, c + 1), (r + 1, c - 1), (r + 1, c)]
            out[key] = "".join(
                _ROWS[i][j] for i, j in near if 0 <= i < len(_ROWS) and 0 <= j < len(_ROWS[i])
            )
    return out


NEIGHBOURS = _neighbours()


@dataclass(frozen=True)
class Ranked:
    """One entry a query points to, with its score (higher is closer)."""

    id: str
    title: str
    url: str
    summary: str
    category: str
    severity: str
    score: float


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def words(text: str) -> list[str]:
    """The raw words of `text`: ASCII words (an identifier such as `weights_only` as its parts,
    then whole), and CJK runs split into character bigrams."""
    out: list[str] = []
    for token in TOKEN.findall(_fold(text)):
        if CJK.match(token) and len(token) > 1:
            out.extend(token[i : i + 2] for i in range(len(token) - 1))
        elif "_" in token:
            out.extend(token.split("_"))
            out.append(token)
        else:
            out.append(token)
    return out


_SYNONYMS = {tuple(k.replace("_", " ").split()): v for k, v in SYNONYMS}
_SYNONYM_LONGEST = max(len(k) for k in _SYNONYMS)
_STOP = frozenset(STOP_WORDS)


def _synonyms(raw: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(raw):
        for size in range(min(_SYNONYM_LONGEST, len(raw) - i), 0, -1):
            found = _SYNONYMS.get(tuple(raw[i : i + size]))
            if found is not None:
                out.extend(found.split())
                i += size
                break
        else:
            out.append(raw[i])
            i += 1
    return out


def stem(word: str) -> str:
    """A light English stemmer, the same rules as describe-core.js: plurals, -ing, -ed, a doubled
    final consonant, a final e. Words with digits and CJK are left as they are."""
    if not word.isascii() or any(c.isdigit() for c in word) or len(word) < 4:
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "is")):
        word = word[:-1]
    if len(word) >= 6 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) >= 5 and word.endswith("ed"):
        word = word[:-2]
    else:
        return word[:-1] if len(word) >= 5 and word.endswith("e") else word
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]
    return word[:-1] if len(word) >= 5 and word.endswith("e") else word


def terms(text: str) -> list[str]:
    """The terms `text` is indexed by, in order: words, synonyms folded, stop words dropped,
    stemmed."""
    return _terms(words(text))


def _terms(raw: list[str]) -> list[str]:
    return [stem(w) for w in _synonyms(raw) if w not in _STOP]


def _correctable(word: str) -> bool:
    return word.isascii() and not any(c.isdigit() for c in word)


def correct(
    raw: list[str], vocabulary: Mapping[str, int], typing: bool, known: Mapping[str, Any]
) -> list[str]:
    """The query's words with each word no entry holds replaced by the nearest entry word (fewest
    edits, then the commonest, then the first in order), and, when the reader is `typing`, an
    unfinished last word by the commonest entry word it begins. A word whose stem is one of the
    `known` terms is another form of an entry word ("leaking" of "leak"), not a typo."""
    out = list(raw)
    for i, word in enumerate(raw):
        if word in vocabulary or not _correctable(word):
            continue
        if typing and i == len(raw) - 1 and len(word) >= PREFIX_MIN:
            begun = [v for v in vocabulary if v.startswith(word)]
            if begun:
                out[i] = min(begun, key=lambda v: (-vocabulary[v], v))
                continue
        if len(word) < TYPO_MIN or stem(word) in known:
            continue
        limit = 2 if len(word) >= TYPO_TWO else 1
        # A typo rarely hits the first letter; asking for it keeps the scan short.
        near = [
            (distance(word, v, limit), -vocabulary[v], v)
            for v in vocabulary
            if v[:1] == word[:1] and abs(len(v) - len(word)) <= limit
        ]
        near = [n for n in near if n[0] <= limit]
        if near:
            out[i] = min(near)[2]
    return out


def query_terms(index: Mapping[str, Any], query: str) -> list[str]:
    """The terms of a typed query, each once, in order (typos and an unfinished last word read as
    the entry words meant)."""
    typing = bool(query) and not query[-1:].isspace()
    found = _terms(correct(words(query), index["words"], typing, index["idf"]))
    return list(dict.fromkeys(found))


# ---- the index (built here, read by both halves) -------------------------------------------


def _fields(record: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    yield "title", record["title"]
    for phrase in record.get("phrases", ()):
        yield "phrases", phrase
    for tag in record.get("tags", ()):
        yield "tags", tag.replace("-", " ")
    for row in record.get("symptoms", ()):
        yield "symptoms", row["symptom"]
    yield "summary", record["summary"]
    for name in record.get("affects", ()):
        yield "affects", name


def _weights_of(fields: Iterable[tuple[str, str]]) -> dict[str, float]:
    per_field: dict[tuple[str, str], int] = {}
    for field, text in fields:
        for term in terms(text):
            per_field[field, term] = per_field.get((field, term), 0) + 1
    weight = dict(FIELD_WEIGHTS)
    total: dict[str, float] = {}
    for (field, term), count in per_field.items():
        total[term] = total.get(term, 0.0) + weight[field] * min(count, FIELD_TF_CAP)
    return {
        t: round((SATURATION + 1) * w / (SATURATION + w), DIGITS) for t, w in sorted(total.items())
    }


def _phrases(record: Mapping[str, Any]) -> list[list[str]]:
    out: list[list[str]] = []
    for text in (record["title"], *record.get("phrases", ())):
        unique = list(dict.fromkeys(terms(text)))
        if len(unique) >= 2 and unique not in out:
            out.append(unique)
    return out


def excerpt(text: str, size: int = 200) -> str:
    """The start of `text`, cut at a word, for a result's second line."""
    text = " ".join(text.split())
    if len(text) <= size:
        return text
    return text[:size].rsplit(" ", 1)[0] + " …"


@dataclass(frozen=True)
class _Document:
    """What the index holds of one entry, made from its indexed fields alone."""

    weights: tuple[tuple[str, float], ...]
    words: frozenset[str]  # its correctable words, for the vocabulary
    phrases: tuple[tuple[str, ...], ...]
    titled: bool


@functools.cache
def _document(fields: tuple[tuple[str, str], ...]) -> _Document:
    """Cached by the fields' text: a preview rebuilds the index on every edit, and all but the
    edited entries have the fields they had."""
    record = {"title": fields[0][1], "phrases": [t for f, t in fields if f == "phrases"]}
    return _Document(
        tuple(_weights_of(fields).items()),
        frozenset(w for _, text in fields for w in words(text) if _correctable(w)),
        tuple(tuple(p) for p in _phrases(record)),
        len(set(terms(fields[0][1]))) >= 2,
    )


def build_index(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The described-query index of active entry records (as exported in entries.json)."""
    active = [r for r in records if r.get("status", "active") == "active"]
    documents = [_document(tuple(_fields(r))) for r in active]
    weights = [dict(d.weights) for d in documents]
    vocabulary: dict[str, int] = {}
    for d in documents:
        for word in d.words:
            vocabulary[word] = vocabulary.get(word, 0) + 1
    df: dict[str, int] = {}
    for w in weights:
        for term in w:
            df[term] = df.get(term, 0) + 1
    n = len(active)
    idf = {t: round(math.log(1 + (n - d + 0.5) / (d + 0.5)), DIGITS) for t, d in sorted(df.items())}
    return {
        # The query half's constants, so that describe-core.js has no copy of its own.
        "params": {
            "phrase_bonus": PHRASE_BONUS,
            "title_bonus": TITLE_BONUS,
            "typo_min": TYPO_MIN,
            "typo_two": TYPO_TWO,
            "prefix_min": PREFIX_MIN,
            "neighbours": NEIGHBOURS,
            "min_score": MIN_SCORE,
            "relative_floor": RELATIVE_FLOOR,
        },
        "stop": list(STOP_WORDS),
        "synonyms": [list(pair) for pair in SYNONYMS],
        "idf": idf,
        "words": dict(sorted(vocabulary.items())),
        "docs": [
            {
                "id": r["id"],
                "title": r["title"],
                "url": r["url"],
                "summary": excerpt(r["summary"]),
                "category": r["category"],
                "severity": r["severity"],
                "w": w,
                "phrases": [list(p) for p in d.phrases],
                "titled": d.titled,
                "prior": round(PRIOR * math.log(1 + len(r.get("referenced_by", ()))), DIGITS),
            }
            for r, w, d in zip(active, weights, documents, strict=True)
        ],
    }


# ---- ranking a query ------------------------------------------------------------------------


def distance(a: str, b: str, limit: int) -> int:
    """The optimal string alignment distance of `a` and `b` (insertions, deletions, swaps of
    neighbours, substitutions: 1 for a neighbouring key, else 2), or limit + 1 once it must
    exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            x, y = a[i - 1], b[j - 1]
            cost = 0 if x == y else 1 if y in NEIGHBOURS.get(x, "") else 2
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, row = row, current
    return min(row[len(b)], limit + 1)


def _round6(x: float) -> float:
    # Math.round's rule, so that both halves round alike.
    return math.floor(x * 1e6 + 0.5) / 1e6


def rank(index: Mapping[str, Any], query: str, limit: int = 10) -> list[Ranked]:
    """The entries closest to `query`, best first, ties by id; none when nothing scores above
    MIN_SCORE."""
    idf: Mapping[str, float] = index["idf"]
    asked = [t for t in query_terms(index, query) if t in idf]
    held = set(asked)
    scored: list[tuple[float, str, Mapping[str, Any]]] = []
    for doc in index["docs"]:
        w: Mapping[str, float] = doc["w"]
        score = 0.0
        for term in asked:
            if term in w:
                score += idf[term] * w[term]
        bonus = 0.0
        for n, phrase in enumerate(doc["phrases"]):
            matched = [t for t in phrase if t in held]
            if len(matched) >= 2 or len(matched) == len(phrase):
                # The more of the phrase the query holds, the more it is this phrase; the title
                # (the first) names the page itself.
                cover = len(matched) / len(phrase)
                factor = TITLE_BONUS if n == 0 and doc["titled"] else PHRASE_BONUS
                bonus = max(bonus, factor * cover * cover * sum(idf[t] for t in matched))
        score += bonus
        if score < MIN_SCORE:
            continue  # a coincidence of common words, whatever links to the page
        score = _round6(score + doc["prior"])
        scored.append((score, doc["id"], doc))
    scored.sort(key=lambda s: (-s[0], s[1]))
    if not scored:
        return []
    floor = scored[0][0] * RELATIVE_FLOOR
    return [
        Ranked(d["id"], d["title"], d["url"], d["summary"], d["category"], d["severity"], s)
        for s, _, d in scored[:limit]
        if s >= floor
    ]


# The lines a log's failure is read from when no signature matched: search.js's ERROR_LINE.
ERROR_LINE = re.compile(r"error|exception|failed|killed|fault|abort|warning", re.IGNORECASE)
TAIL_BYTES = 16384  # how much of a log's end the closest pages are looked for in


class Tail:
    """The last TAIL_BYTES of a stream of bytes, kept as it passes: where the closest pages are
    looked for when nothing matched. Trimmed only past twice that, so the copying stays
    amortised however small the pieces."""

    def __init__(self) -> None:
        self.data = bytearray()

    def add(self, data: bytes) -> None:
        self.data += data
        if len(self.data) > 2 * TAIL_BYTES:
            del self.data[:-TAIL_BYTES]

    def __bool__(self) -> bool:
        return bool(self.data)

    def text(self) -> str:
        return bytes(self.data[-TAIL_BYTES:]).decode("utf-8", "replace")


def last_error_line(tail: str) -> str | None:
    """The last line of `tail` (a log's end) that says error, else its last non-blank line."""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    for line in reversed(lines):
        if ERROR_LINE.search(line):
            return line[:300]
    return lines[-1][:300] if lines else None


def rank_records(records: Sequence[Mapping[str, Any]], query: str, limit: int = 10) -> list[Ranked]:
    """`rank` over entry records, building the index on the way (the CLI's path)."""
    return rank(build_index(records), query, limit)
