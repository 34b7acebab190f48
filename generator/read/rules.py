"""Content rules a reviewer would otherwise have to catch, on top of the schema: placeholder text,
references that are search results or carry tracking parameters, signatures too generic to
identify anything, and one signature claimed by two unrelated entries."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .load import Loaded
from .model import Entry, Signature
from .pattern import (
    PLACEHOLDER,
    PLACEHOLDER_LIKE,
    compiled,
    literal_view,
    match,
    normalise,
    parse_condition,
    pieces,
)
from .problems import Problem
from .text import PLACEHOLDERS, plain_parts

MIN_PRIMARY_LITERAL = 10
MIN_ANCHOR = 4
# A non-finite value (`nan` or `inf` as a whole word) is as specific as this many letters.
NONFINITE_WORTH = 6
# Text every traceback or log holds: it identifies nothing on its own.
GENERIC_SIGNATURES = {
    "traceback (most recent call last):",
    "traceback (most recent call last)",
    "runtimeerror",
    "runtimeerror:",
    "error",
    "error:",
    "exception",
    "warning",
    "failed",
    "killed",
    "cuda error",
    "cuda error:",
    "runtimeerror: cuda error:",
    "assertionerror",
    "valueerror",
    "typeerror",
    "keyerror",
    "segmentation fault",
    "core dumped",
}
# Fields not checked for placeholder words: code (a `# TODO` comment can be real), logs (people
# redact paths as `XXX` in what they post, and a log is copied as posted) and URLs (checked on
# their own in `references`).
SEARCH_HOSTS = re.compile(r"(^|\.)(google|bing|duckduckgo|yahoo|baidu|yandex)\.[a-z.]+$")
# Regular-expression syntax in a signature: the contributor expected a regex, but signatures are
# literal text with `*` wildcards (which is what keeps matching linear).
REGEX_SYNTAX = re.compile(r"\\[dswbDSW]|\[\^?[0-9a-zA-Z]-[0-9a-zA-Z]\]|\(\?[:=!<]|\{\d+,\d*\}")
TRACKING = re.compile(r"^(utm_[a-z]+|fbclid|gclid|mc_cid|mc_eid|igshid|ref_src|si)$")


def _strings(
    data: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(data, str):
        yield path, data
    elif isinstance(data, dict):
        for key, value in data.items():
            skip = key in ("url", "source") or (key in ("code", "log") and isinstance(value, str))
            if not skip:
                yield from _strings(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _strings(value, (*path, i))


def problem_at(loaded: Loaded, path: tuple[str | int, ...], message: str, fix: str) -> Problem:
    line, col = loaded.source.position(path)
    return Problem(loaded.path, line, col, message, fix)


def placeholders(loaded: Loaded) -> list[Problem]:
    problems = []
    for path, text in _strings(loaded.source.data):
        found = PLACEHOLDERS.search(plain_parts(text))
        if found:
            problems.append(
                problem_at(
                    loaded,
                    path,
                    f"placeholder text `{found.group().strip()}` left in",
                    "write the real content, or remove the field if it is optional",
                )
            )
    return problems


def url_problem(url: str) -> str | None:
    """Why a reference URL is not acceptable, or None."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if (
        SEARCH_HOSTS.search(host)
        or parts.path.rstrip("/").endswith("/search")
        or (host == "github.com" and parts.path.startswith("/search"))
    ):
        return "points at search results"
    tracking = [key for key, _ in parse_qsl(parts.query) if TRACKING.match(key.lower())]
    if tracking:
        return f"carries tracking parameters ({', '.join(tracking)})"
    return None


def references(loaded: Loaded) -> list[Problem]:
    problems = []
    for field, key in (("references", "url"), ("examples", "source")):
        for i, item in enumerate(getattr(loaded.entry, field)):
            url = getattr(item, key)
            why = "is a placeholder" if PLACEHOLDERS.search(url) else url_problem(url)
            if why:
                problems.append(
                    problem_at(
                        loaded,
                        (field, i, key),
                        f"`{field}[{i}].{key}` {why}",
                        "link the real page: no placeholder, search results or tracking parameters",
                    )
                )
    return problems


def _placeholder_problem(text: str) -> tuple[str, str] | None:
    known = "`{nonfinite}` (NaN or inf) and `{size:NAME}` (a size such as `1.53 GiB`)"
    for found in PLACEHOLDER_LIKE.finditer(text):
        if not PLACEHOLDER.fullmatch(found.group()):
            return f"unknown placeholder `{found.group()}`", f"the placeholders are {known}"
    for piece in text.split("*"):
        first = PLACEHOLDER.search(piece)
        if first and not piece[: first.start()].strip():
            return (
                f"placeholder `{first.group()}` does not follow literal text",
                "put the text printed just before the value in front of it, in the same piece "
                "(not at the start or right after `*`)",
            )
    return None


def _when_problem(sig: Signature) -> tuple[str, str] | None:
    if sig.when is None:
        return None
    condition = parse_condition(sig.when)
    syntax = "write `NAME < NAME` or `NAME >= 2 GiB` (operators < <= > >=)"
    if condition is None:
        return f"`when: {sig.when}` is not a condition", syntax
    captured = {m.group(1).partition(":")[2] for m in PLACEHOLDER.finditer(normalise(sig.text))}
    for name in (condition.left, condition.right):
        if name is not None and name not in captured:
            return (
                f"`when` names `{name}`, which the signature does not capture",
                f"capture it with `{{size:{name}}}` in the text, or name one it captures",
            )
    return None


def _signature_problem(sig: Signature) -> tuple[str, str] | None:
    """What is wrong with one signature (message, fix), or None."""
    view = literal_view(sig.text)
    literal = "".join(pieces(sig.text)).replace(" ", "") + "x" * (
        NONFINITE_WORTH * sig.text.count("{nonfinite}")
    )
    regex = REGEX_SYNTAX.search(view)
    if regex:
        return (
            f"signature uses regular-expression syntax `{regex.group()}`",
            "signatures are literal text: copy the message as printed and put `*` where "
            "the variable part goes",
        )
    if "\n" in sig.text.strip():
        return (
            "signature spans several lines",
            "signatures match within one line: keep the most specific line",
        )
    found = _placeholder_problem(normalise(sig.text))
    if found:
        return found
    if not sig.context and " ".join(pieces(sig.text)).strip(" :") in {
        g.strip(" :") for g in GENERIC_SIGNATURES
    }:
        return (
            f"signature `{sig.text}` is too generic",
            "use the specific error message, or mark it `context: true`",
        )
    if not sig.context and len(literal) < MIN_PRIMARY_LITERAL:
        return (
            f"signature `{sig.text}` has fewer than {MIN_PRIMARY_LITERAL} literal characters",
            "a primary signature must identify the failure alone: use more of "
            "the message, or mark it `context: true`",
        )
    if max((len(t) for p in pieces(sig.text) for t in p.split(" ")), default=0) < MIN_ANCHOR:
        return (
            f"signature `{sig.text}` has no word of {MIN_ANCHOR} or more characters",
            "include a distinctive word: short fragments slow every diagnosis",
        )
    return None


def all_signatures(entry: Entry) -> Iterator[tuple[tuple[str | int, ...], Signature]]:
    """Every signature of an entry with its path: its own, then its symptoms'."""
    for i, sig in enumerate(entry.signatures):
        yield ("signatures", i), sig
    for n, symptom in enumerate(entry.symptoms):
        for i, sig in enumerate(symptom.signatures):
            yield ("symptoms", n, "signatures", i), sig


def signatures(loaded: Loaded) -> list[Problem]:
    problems = []
    for path, sig in all_signatures(loaded.entry):
        found = _signature_problem(sig)
        if found:
            problems.append(problem_at(loaded, path, *found))
        elif when := _when_problem(sig):
            problems.append(problem_at(loaded, (*path, "when"), *when))
    return problems


def only_context_signatures(loaded: Loaded) -> list[Problem]:
    """Signatures that are all context ones: they count only beside a primary signature of the
    same entry, so the entry could never be diagnosed."""
    sigs = loaded.entry.signatures
    if not sigs or any(not sig.context for sig in sigs):
        return []
    return [
        problem_at(
            loaded,
            ("signatures",),
            "every signature is a context one, which counts only beside a primary signature of "
            "this entry: the entry can never be diagnosed",
            "drop `context: true` from the text that identifies the failure on its own, or "
            "remove `signatures` if no printed text does",
        )
    ]


@dataclass(frozen=True)
class Proofs:
    """What one entry proves of its primary signatures (by an example log or a `source`), and
    which it leaves to another entry that shares them; by compiled form."""

    proven: frozenset[str]
    pending: tuple[tuple[tuple[str | int, ...], str], ...]  # (path, compiled form)


def signature_proofs(loaded: Loaded) -> Proofs:
    """One entry's part of `unproven_signatures`. A signature already reported as malformed or
    unfilled is not reported twice."""
    proven: set[str] = set()
    pending: list[tuple[tuple[str | int, ...], str]] = []
    logs = [normalise(example.log) for example in loaded.entry.examples]
    for path, sig in all_signatures(loaded.entry):
        malformed = _signature_problem(sig) or _when_problem(sig)
        if sig.context or malformed or PLACEHOLDERS.search(sig.text):
            continue
        key = repr(compiled(sig.text))
        if sig.source is not None or any(
            match(compiled(sig.text), log) is not None for log in logs
        ):
            proven.add(key)
        else:
            pending.append((path, key))
    return Proofs(frozenset(proven), tuple(pending))


def unproven_signatures(
    entries: Sequence[Loaded], proofs: Sequence[Proofs] | None = None
) -> list[Problem]:
    """A primary signature must be provable: an example log of its entry holds it, or it names
    the release file it is printed from (`source`, which `encyclopedia verify` confirms), or an
    entry that shares it (they must be related, see `shared_signatures`) proves it so.
    `proofs` are each entry's `signature_proofs`, when already known."""
    if proofs is None:
        proofs = [signature_proofs(loaded) for loaded in entries]
    proven = frozenset().union(*(p.proven for p in proofs))
    return [
        problem_at(
            loaded,
            path,
            "no example log holds this signature and it names no `source`",
            "add the real log it came from to `examples` (with its thread), or give "
            "`source: {package, version, file}` where the library prints it",
        )
        for loaded, found in zip(entries, proofs, strict=True)
        for path, key in found.pending
        if key not in proven
    ]


# A reader at 3 am reads the summary whole and the prose in one sitting: past these, warn.
SUMMARY_WORDS = 80
PROSE_WORDS = 700
FAQ_SENTENCES = 2  # an answer longer than this belongs in a section, with the FAQ linking there
# A sentence ends at `.`, `!` or `?` followed by a space or the end; `e.g.`-style abbreviations
# and version numbers (no space after the dot) do not end one.
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)[.!?](?=\s|$)")


def prose_words(entry: Entry) -> int:
    """The words of an entry's prose sections: what a reader reads besides code and logs."""
    texts = [entry.description, entry.mechanism, entry.root_cause, entry.fix.summary]
    texts += [*entry.observe, *entry.confirm, *entry.fix.steps, *entry.prevention]
    texts += [q.a for q in entry.faq] + [s.cause for s in entry.symptoms]
    texts += [entry.production or ""] + [c.why for c in entry.fix.code]
    return sum(len(text.split()) for text in texts)


def length_warnings(loaded: Loaded) -> list[Problem]:
    """Warnings, not problems: a long summary or long prose (say each thing once)."""
    warnings = []
    summary = len(loaded.entry.summary.split())
    if summary > SUMMARY_WORDS:
        warnings.append(
            problem_at(
                loaded,
                ("summary",),
                f"the summary is {summary} words",
                f"keep it to about {SUMMARY_WORDS}: the cause and the fix, details below",
            )
        )
    prose = prose_words(loaded.entry)
    if prose > PROSE_WORDS:
        warnings.append(
            problem_at(
                loaded,
                ("description",),
                f"the prose sections are {prose} words together",
                f"aim for about {PROSE_WORDS}: say each thing once, where it belongs",
            )
        )
    for i, item in enumerate(loaded.entry.faq):
        sentences = len(_SENTENCE_END.findall(item.a.strip()))
        if sentences > FAQ_SENTENCES:
            warnings.append(
                problem_at(
                    loaded,
                    ("faq", i, "a"),
                    f"this FAQ answer is {sentences} sentences",
                    f"answer in at most {FAQ_SENTENCES} and link to the section with the "
                    "detail, or move the detail there",
                )
            )
    return warnings


def shared_signatures(entries: Sequence[Loaded]) -> list[Problem]:
    """The same primary signature on two entries that do not relate to each other: readers and
    the matcher cannot tell the two apart, and neither page says how."""
    owners: dict[str, list[tuple[Loaded, tuple[str | int, ...]]]] = {}
    for loaded in entries:
        for path, sig in all_signatures(loaded.entry):
            if not sig.context:
                owners.setdefault(repr(compiled(sig.text)), []).append((loaded, path))
    related = {(a.id, r.id) for a in entries for r in a.entry.related}
    problems = []
    for claimed in owners.values():
        for n, (loaded, path) in enumerate(claimed):
            for other, _ in claimed[:n]:
                if (loaded.id, other.id) not in related and (other.id, loaded.id) not in related:
                    problems.append(
                        problem_at(
                            loaded,
                            path,
                            f"signature also claimed by {other.path}, which is not "
                            "related to this entry",
                            f"add a `related` link (e.g. `confused-with`) to "
                            f"`{other.id}` and say how to tell the two apart",
                        )
                    )
    return problems


def reproducers(loaded: Loaded) -> list[Problem]:
    """A reproducer script that is not valid Python is reported where the bad line is in the
    entry file, before anyone needs PyTorch to find out."""
    spec = loaded.entry.reproduce
    if spec is None:
        return []
    problems = []
    for name in ("failing", "fixed"):
        try:
            compile(getattr(spec, name), f"reproduce.{name}", "exec", dont_inherit=True)
        except SyntaxError as err:
            key_line, key_col = loaded.source.position(("reproduce", name), key=True)
            value_line, _ = loaded.source.position(("reproduce", name))
            # A block scalar (`failing: |`) starts on the line after its key, indented two
            # more columns; a one-line value is reported where it starts.
            block = value_line == key_line
            line = key_line + (err.lineno or 1) if block else value_line
            col = key_col + 2 + max((err.offset or 1) - 1, 0) if block else key_col
            problems.append(
                Problem(
                    loaded.path,
                    line,
                    col,
                    f"`reproduce.{name}` is not valid Python: {err.msg}",
                    "fix the script (run it with python to see the error)",
                )
            )
    return problems


def fix_steps(loaded: Loaded) -> list[Problem]:
    """A symptom row's `fix_step` names one of the entry's fix steps."""
    count = len(loaded.entry.fix.steps)
    return [
        problem_at(
            loaded,
            ("symptoms", i, "fix_step"),
            f"`fix_step: {row.fix_step}` names no step: `fix.steps` has {count}",
            f"give the number of the step (1 to {count}) that addresses this row's cause",
        )
        for i, row in enumerate(loaded.entry.symptoms)
        if row.fix_step is not None and row.fix_step > count
    ]


def raised_frames(loaded: Loaded) -> list[Problem]:
    """A `raised` rule's source is a file its frame names: the file itself, or one under the
    folder it names."""
    return [
        problem_at(
            loaded,
            ("raised", i, "source", "file"),
            f"`{rule.source.file}` is not the file `frame: {rule.frame}` names",
            "name the release file the frame is in (its path from the package folder on)",
        )
        for i, rule in enumerate(loaded.entry.raised)
        if "/" + rule.frame not in "/" + rule.source.file
    ]


def entry_problems(loaded: Loaded) -> list[Problem]:
    """The rules that read one entry alone."""
    problems = placeholders(loaded) + references(loaded) + signatures(loaded)
    problems += raised_frames(loaded)
    return problems + only_context_signatures(loaded) + reproducers(loaded) + fix_steps(loaded)


RuleMemo = dict[int, tuple[Loaded, list[Problem], Proofs]]


def check(entries: Sequence[Loaded], memo: RuleMemo | None = None) -> list[Problem]:
    """Every rule on every entry. `memo` (a preview's, kept across rebuilds) holds the last
    results of `entry_problems` and `signature_proofs` by the identity of the record they were
    computed for, with the record itself so that its id cannot be reused: records are immutable
    and a preview keeps those of unchanged files, so a rebuild reruns the rules of the edited
    files only."""
    problems: list[Problem] = []
    proofs: list[Proofs] = []
    current: RuleMemo = {}
    for loaded in entries:
        last = memo.get(id(loaded)) if memo is not None else None
        if last is not None and last[0] is loaded:
            current[id(loaded)] = last
        else:
            current[id(loaded)] = (loaded, entry_problems(loaded), signature_proofs(loaded))
        problems += current[id(loaded)][1]
        proofs.append(current[id(loaded)][2])
    if memo is not None:
        memo.clear()
        memo.update(current)
    return problems + shared_signatures(entries) + unproven_signatures(entries, proofs)
