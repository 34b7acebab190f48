"""How the CLI prints a diagnosis in a terminal: wrapped to the terminal's width, coloured only
on a terminal that wants colour, every line made of escaped text (a log line or an entry field
never reaches the terminal as a control sequence)."""

from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TextIO

from ..diagnose import Diagnosis, Match
from ..diagnose.records import EntrySignatures
from ..read.text import one_line, visible
from ..search.describe import Ranked

MIN_WIDTH = 40
MAX_WIDTH = 120
# SGR codes: written by us, around text that `visible` has already made harmless.
_CODES = {"bold": "1", "dim": "2", "red": "31", "yellow": "33", "green": "32", "cyan": "36"}
_CONFIDENCE = {"high": "green", "medium": "yellow", "low": "dim"}

NO_MATCH = (
    "No known failure matched this log. Nothing here identifies one: search the site for the "
    "exact error line, or open an entry if you find its cause."
)


@dataclass(frozen=True)
class Style:
    colour: bool
    width: int

    def paint(self, text: str, *names: str) -> str:
        if not self.colour or not names:
            return text
        codes = ";".join(_CODES[n] for n in names)
        return f"\x1b[{codes}m{text}\x1b[0m"


def style_for(stream: TextIO, choice: str = "auto") -> Style:
    """Colour when asked (`always`), never when asked or when NO_COLOR is set, else only on a
    terminal that is not `dumb`. Width from COLUMNS or the terminal, within bounds."""
    if choice == "always":
        colour = True
    elif choice == "never" or os.environ.get("NO_COLOR"):
        colour = False
    else:
        colour = stream.isatty() and os.environ.get("TERM") != "dumb"
    width = shutil.get_terminal_size((100, 24)).columns
    return Style(colour, max(MIN_WIDTH, min(MAX_WIDTH, width)))


def _wrap(text: str, style: Style, indent: str, first: str | None = None) -> list[str]:
    """`text` (escaped, one paragraph) wrapped at word boundaries; nothing is cut off."""
    return textwrap.wrap(
        visible(one_line(text)),
        width=style.width,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_long_words=True,
        break_on_hyphens=False,
    ) or [indent]


Locate = Callable[[int], str]  # a line number of the read log -> how to name it ("line 5")


def diagnosis(
    result: Diagnosis,
    records: Mapping[str, EntrySignatures],
    style: Style,
    locate: Locate = lambda n: f"line {n}",
) -> list[str]:
    """The printed diagnosis: each initiating failure with what the log shows, what to do and
    its evidence, weaker readings of the same lines folded under it, collateral failures after
    the failure that caused them, and how to read more."""
    if not result.matches:
        return _wrap(NO_MATCH, style, "")
    out: list[str] = []
    matches = result.matches
    titles = {m.id: m.title for m in matches}
    lead = next((m for m in matches if not m.collateral_of), None)
    shown = [m for m in matches if not m.also_possible_for]
    for i, match in enumerate(shown, 1):
        out += _heading(i, match, titles, style)
        out.append("   " + style.paint(visible(link(match.url, match.id)), "cyan"))
        out += _what_it_shows(match, style)
        record = records.get(match.id)
        summary = record.get("summary") if record else None
        advise = match is lead or (not match.collateral_of and match.confidence != "low")
        if advise and record and summary:
            # What to do, before the evidence: the quick answer and the first fix step.
            out += _wrap(summary, style, "   ")
            first = record.get("first_step")
            if first and not (match.symptom and match.symptom.fix):
                out += _wrap(first, style, "     ", "   First step: ")
        out += _evidence(match, style, locate)
        for alt in matches:
            if alt.also_possible_for == match.id:
                out += _wrap(
                    f"{alt.title} [{alt.id}], {alt.confidence} confidence, from the same lines",
                    style,
                    "     ",
                    "   also possible: ",
                )
    if is_address(shown[0].url):  # else the first link already is this command
        out += ["", *_wrap(f"More: encyclopedia explain {shown[0].id}", style, "")]
    return out


def _what_it_shows(match: Match, style: Style) -> list[str]:
    """The symptom row the log shows, with the values read from it, and the numbers' readings."""
    out: list[str] = []
    symptom = match.symptom
    if symptom:
        out += _wrap(symptom.symptom, style, "     ", "   Your log shows: ")
        values = ", ".join(f"{k} {v}" for k, v in sorted(symptom.values.items()))
        if values:
            out += _wrap(values, style, "     ", "   Read from the log: ")
        out += _wrap(symptom.cause, style, "     ", "   Cause: ")
        if symptom.fix:  # cause first: the step for this row's cause, not the generic one
            out += _wrap(symptom.fix, style, "     ", "   First step: ")
    for reading in match.readings:
        out += _wrap(reading, style, "     ", "   Your log's numbers: ")
    if match.ranks:
        out += _wrap(match.ranks, style, "     ", "   Ranks: ")
    return out


def _evidence(match: Match, style: Style, locate: Locate) -> list[str]:
    out: list[str] = []
    printed: set[int] = set()
    for ev in match.evidence:
        if ev.line in printed:
            continue  # two signatures on one line: the line once
        printed.add(ev.line)
        # a log file's name is the reader's data too: shown, not obeyed
        where = style.paint(visible(locate(ev.line)) + ":", "dim")
        out += _wrap(ev.text, style, "       ", f"   {where} ")
        # A traceback named by its structure (frames.py): say what matched.
        whys = [e.signature for e in match.evidence if e.line == ev.line]
        for why in (w for w in whys if w.startswith("raised: ")):
            out += _wrap(why, style, "         ")
    return out


CLOSEST = (
    "No known failure signature matched, so this is not a diagnosis. The pages whose text is "
    "closest to the log's last error line:"
)


def closest(line: str, pages: list[Ranked], style: Style) -> list[str]:
    """What to read when nothing matched: the pages the search box would show for the log's
    last error line, clearly apart from a diagnosis (no confidence, no fix)."""
    out = [*_wrap(CLOSEST, style, ""), *_wrap(line, style, "     ", "   ")]
    for i, page in enumerate(pages, 1):
        out.append(f"{i}. {visible(page.title)} [{page.id}]")
        out.append("   " + style.paint(visible(link(page.url, page.id)), "cyan"))
    return out


def search_results(errors: Diagnosis, pages: list[Ranked], style: Style) -> list[str]:
    """`encyclopedia search`: the entries whose signatures the words match, then the entries
    they describe best."""
    out: list[str] = []
    n = 0
    shown = set()
    for match in errors.matches:
        if match.also_possible_for or match.collateral_of:
            continue
        n += 1
        shown.add(match.id)
        badge = style.paint(f"matches an error signature, {match.confidence} confidence", "green")
        out.append(f"{n}. {style.paint(visible(match.title), 'bold')} [{match.id}] {badge}")
        out.append("   " + style.paint(visible(link(match.url, match.id)), "cyan"))
    for page in pages:
        if page.id in shown:
            continue
        n += 1
        out.append(f"{n}. {style.paint(visible(page.title), 'bold')} [{page.id}]")
        out += _wrap(page.summary, style, "   ")
        out.append("   " + style.paint(visible(link(page.url, page.id)), "cyan"))
    return out or _wrap("No entry matches these words.", style, "")


def is_address(url: str) -> bool:
    """Whether `url` can be opened as it is; a bare site path (`/memory/x/`, no site URL
    configured) cannot."""
    return "://" in url


def link(url: str, entry_id: str) -> str:
    """Where to read an entry: its address, or, with no site URL configured, the command that
    prints it."""
    return url if is_address(url) else f"encyclopedia explain {entry_id}"


def _heading(i: int, match: Match, titles: dict[str, str], style: Style) -> list[str]:
    notes = []
    if match.rank is not None:
        notes.append(f"rank {match.rank}")
    if match.collateral_of:
        cause = titles.get(match.collateral_of, match.collateral_of)
        label = style.paint(f"caused by {match.collateral_of}", "dim")
        notes.insert(0, label)
        head = f"{i}. {visible(match.title)} [{match.id}]"
        text = f"{head} ({', '.join(notes)})"
        return [style.paint(text, "dim"), f"   a consequence of {visible(cause)}: fix that first"]
    badge = style.paint(f"{match.confidence} confidence", _CONFIDENCE[match.confidence])
    extra = f", {', '.join(notes)}" if notes else ""
    title = style.paint(visible(match.title), "bold")
    return [f"{i}. {title} [{match.id}] score {match.score}, {badge}{extra}"]
