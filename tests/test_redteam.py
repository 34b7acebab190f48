"""The red-team corpus (tests/redteam/): every payload in every text field is either refused
with `path:line:col: problem; fix` (exit 1, no traceback) or built into a page where it is
literal text: no markup, no script, no included file, no link to another host, and a terminal
that prints it sees no escape sequence."""

from __future__ import annotations

import html
import re
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

from click.testing import CliRunner

from generator.pages import csp
from generator.read.text import normalize_newlines
from generator.read.yamlsource import read_source
from generator.terminal.cli import main
from tests.redteam.corpus import PLACED_IN, Outcome, files_for, payloads
from tests.support import run_build

PROBLEM_LINE = re.compile(r"^entries/\S+:\d+:\d+: .+; .+$")
# What a page's content may never hold, whatever an entry says.
FORBIDDEN_IN_CONTENT = {
    "script",
    "iframe",
    "object",
    "embed",
    "base",
    "form",
    "math",
    "svg",
    "img",
    "style",
    "meta",
    "link",
    "textarea",
    "details",
    "frame",
    "frameset",
    "video",
    "audio",
    "source",
}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "data", "poster", "srcset", "xlink:href"}
# Text of files in the checkout that a snippet line would pull in.
CANARIES = ("repositoryformatversion", "markdown_extensions:", "build-backend")


def test_the_corpus_is_large_and_varied() -> None:
    kinds = {p.kind for p in payloads()}
    assert len(payloads()) >= 40 and len(kinds) == len(payloads())


def test_every_refusal_is_a_clean_problem_line(redteam_outcomes: list[Outcome]) -> None:
    bad = []
    for item in redteam_outcomes:
        if item.crashed:
            bad.append(f"{item.placement.field}: crashed\n{item.crashed}")
        elif not item.accepted:
            if item.exit_code != 1 or not item.lines:
                bad.append(f"{item.placement.field}: exit {item.exit_code}")
            for line in item.lines:
                if not PROBLEM_LINE.match(line) or any(
                    unicodedata.category(c) in ("Cc", "Cf") for c in line
                ):
                    bad.append(f"{item.placement.field}: {line!r}")
    assert bad == []


def test_refusals_point_at_the_payload_file(redteam_outcomes: list[Outcome]) -> None:
    wrong = [
        f"{o.placement.field}: {o.lines}"
        for o in redteam_outcomes
        if not o.accepted
        and not any(line.startswith(PLACED_IN[o.placement.file] + ":") for line in o.lines)
    ]
    assert wrong == []


def test_invisible_and_control_characters_are_refused_everywhere(
    redteam_outcomes: list[Outcome],
) -> None:
    for item in redteam_outcomes:
        text = normalize_newlines(item.placement.payload.text)
        if any(
            unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in text if c not in "\n\t\x85"
        ):
            assert not item.accepted, item.placement.field


# The <details> the entry template writes (entry.md.j2, onpage.py); entry text cannot set a class.
GENERATOR_DETAILS = {"enc-onpage", "enc-more", "enc-log quote", "enc-scripts quote"}


class _Page(HTMLParser):
    """The text a browser shows and the markup found inside the page's <article>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.pre: list[str] = []
        self.problems: list[str] = []
        self.depth = 0  # inside <article>
        self.skip = 0  # inside <script> or <style>
        self.in_pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "article":
            self.depth += 1
        if tag in ("script", "style"):
            self.skip += 1
        if tag == "pre":
            self.in_pre += 1
            self.pre.append("")
        values = dict(attrs)
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"<{tag} {name}=...>")
            if (
                name in URL_ATTRIBUTES
                and value
                and re.search(
                    r"^\s*(javascript|vbscript|data):|evil\.example", value, re.IGNORECASE
                )
            ):
                self.problems.append(f"<{tag} {name}={value!r}>")
        # content tabs are radio buttons, task lists disabled checkboxes, and the folded parts
        # ("On this page", more backlinks, each real log) details of the generator's classes:
        # all its own
        own = (
            tag == "input"
            and (
                values.get("type") == "radio"
                or (values.get("type") == "checkbox" and "disabled" in values)
            )
        ) or (tag == "details" and values.get("class") in GENERATOR_DETAILS)
        if self.depth and tag in FORBIDDEN_IN_CONTENT | {"input"} and not own:
            self.problems.append(f"<{tag}> in the content")
        if tag == "meta" and (values.get("http-equiv") or "").lower() == "refresh":
            self.problems.append("<meta http-equiv=refresh>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self.depth -= 1
        if tag in ("script", "style"):
            self.skip -= 1
        if tag == "pre":
            self.in_pre -= 1

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.text.append(data)
            if self.in_pre:
                self.pre[-1] += data


def read_page(path: Path) -> _Page:
    parser = _Page()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def written_value(item: Outcome) -> str:
    """The payload as the entry holds it once YAML has read it (YAML itself folds some line
    breaks, such as NEL, into spaces)."""
    files = files_for(item.placement)
    name = PLACED_IN[item.placement.file]
    source, _ = read_source(name, files[name].encode("utf-8"))
    value = source.data
    for part in item.placement.path:
        value = value[part]
    return str(value)


def squash(text: str) -> str:
    return re.sub(r"[\s`]+", "", text)


def test_accepted_payloads_render_as_literal_text(
    redteam_site: Path, redteam_outcomes: list[Outcome]
) -> None:
    missing = []
    for item in redteam_outcomes:
        if not item.accepted:
            continue
        number, place = item.placement.payload.number, item.placement
        page_path = {
            "entry": redteam_site / f"cat-{number}" / f"p-{number}" / "index.html",
            "category": redteam_site / f"cat-{number}" / "index.html",
            "tags": redteam_site / "tags" / f"tag-{number}" / "index.html",
        }[place.file]
        page = read_page(page_path)
        text = written_value(item)
        verbatim = place.path[-1] in ("code", "log") or place.path[0] == "signatures"
        if verbatim:
            found = any(text.rstrip("\n") in block for block in page.pre)
        else:
            found = squash(text) in squash("".join(page.text))
        if not found:
            missing.append(f"{place.field} payload {number} ({place.payload.kind})")
    assert missing == []


def test_no_page_holds_markup_scripts_or_included_files(redteam_site: Path) -> None:
    pages = sorted(redteam_site.rglob("*.html"))
    assert len(pages) > 100
    found = []
    for path in pages:
        raw = path.read_text(encoding="utf-8")
        rel = path.relative_to(redteam_site).as_posix()
        redirect = "-old/" in rel  # alias stubs redirect with a meta refresh, by design
        problems = [
            p
            for p in read_page(path).problems
            if not (redirect and p == "<meta http-equiv=refresh>")
        ]
        if rel == "diagnose/index.html":
            # the log box itself: a text area and a file input, written by the generator
            problems = [
                p
                for p in problems
                if p not in ("<textarea> in the content", "<input> in the content")
            ]
        found += [f"{rel}: {p}" for p in problems]
        found += [f"{rel}: inline script {s[:60]!r}" for s in csp.unallowed_scripts(raw)]
        found += [f"{rel}: included {c!r}" for c in CANARIES if c in raw]
    assert found == []


def test_the_terminal_sees_no_escape_sequence(redteam_entries: Path) -> None:
    ids = sorted(p.stem for p in redteam_entries.glob("cat-*/p-*.yaml"))
    assert ids
    for entry_id in ids:
        result = CliRunner().invoke(main, ["explain", entry_id, "--entries", str(redteam_entries)])
        assert result.exit_code == 0, result.output
        assert not [c for c in result.output if unicodedata.category(c) == "Cc" and c not in "\n"]


def test_a_refused_payload_writes_no_site(tmp_path: Path, redteam_entries: Path) -> None:
    import shutil

    entries = tmp_path / "entries"
    shutil.copytree(redteam_entries, entries)
    case = entries / "memory" / "case.yaml"
    text = (redteam_entries / "cat-0" / "p-0.yaml").read_text(encoding="utf-8")
    case.write_text(
        text.replace("title: ", "title: <script>alert(1)</script> ", 1).replace("p-0", "case"),
        encoding="utf-8",
    )
    site = tmp_path / "site"
    result = run_build(entries, site)
    assert result.returncode != 0
    assert "entries/memory/case.yaml:" in result.stderr + result.stdout
    assert not site.exists()
    assert html.escape("<script>") not in (result.stderr + result.stdout)
