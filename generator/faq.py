"""The templated FAQ: each question is asked only when the entry holds the data that answers it,
and each answer is built from that data. Entry text is always a sentence or a block of its own,
never spliced into the middle of a template sentence."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .escape import Md, block, code_block, inline
from .link import Page, relative_uri

LAYER_ANSWER = {
    "software": "Software. The fault is in code ({affects}), not in the GPU: moving the job to "
    "other GPUs or nodes will not make it go away.",
    "configuration": "Configuration. {affects} work as designed; the way the job is set up (sizes, "
    "flags, environment) triggers it, so the fix is a setting or a code change.",
    "hardware": "Hardware. The GPU, its memory or the interconnect is failing; {affects} only "
    "report it, so the fix is on the node, not in the code.",
    "data": "Data. The code is fine ({affects}); some of the input, a sample, a label or a file, "
    "is what breaks the run.",
}


@dataclass(frozen=True)
class Question:
    q: str
    a: Md
    anchor: str


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _layer(page: Page) -> Md | None:
    layer = page.entry.layer
    if layer is None:
        return None
    return inline(LAYER_ANSWER[layer].format(affects=_join(list(page.entry.affects))))


def _stage(page: Page) -> Md | None:
    stages = [s.replace("-", " ") for s in page.entry.stage]
    return Md(inline(f"It is seen during {_join(stages)}."))


def _cheapest(page: Page) -> Md:
    return Md("Start with the first check of the list above:\n\n" + block(page.entry.confirm[0]))


def _fingerprint(page: Page) -> Md | None:
    primary = [s.text for s in page.entry.signatures if not s.context]
    if not primary:
        return None
    lead = (
        "Alert on this line in your logs (case-insensitive; `*` stands for the variable part):"
        if len(primary) == 1
        else "Alert on any of these lines in your logs (case-insensitive; `*` stands for the "
        "variable part):"
    )
    return Md(inline(lead) + "\n\n" + code_block("\n".join(primary)))


def _next(page: Page) -> Md | None:
    links = page.related
    if not links:
        return None
    items = [
        f"- [{inline(link.title)}]({relative_uri(page.src_uri, link.src_uri)}) "
        f"({inline(link.relation.replace('-', ' '))})"
        for link in links
    ]
    return Md(
        inline("If the fix does not help, or the symptoms only partly match:")
        + "\n\n"
        + "\n".join(items)
    )


def _recur(page: Page) -> Md | None:
    entry = page.entry
    fixed_in = entry.applies_to.fixed_in if entry.applies_to else None
    if not entry.prevention and not fixed_in:
        return None
    parts = []
    if fixed_in:
        parts.append(inline("Upgrading removes this cause: it is fixed in " + fixed_in + "."))
    if entry.prevention:
        parts.append(
            inline(
                "It stays away while the prevention checklist holds. The first check to automate:"
            )
        )
        parts.append(block(entry.prevention[0]))
    return Md("\n\n".join(parts))


def _code(page: Page) -> Md | None:
    code = page.entry.fix.code
    if not code:
        return None
    stacks = sorted({str(c.stack) for c in code})
    items = "\n".join(f"- {inline(c.title)} ({inline(c.stack)})" for c in code)
    return Md(inline(f"Yes, for {_join(stacks)}, in the fix section:") + "\n\n" + items)


def _time(page: Page) -> Md | None:
    fix_time = page.entry.fix_time
    return Md(inline(f"Once confirmed, typically {fix_time}.")) if fix_time else None


_ASKED: list[tuple[str, str, Callable[[Page], Md | None]]] = [
    ("faq-layer", "Is this a hardware or a software problem?", _layer),
    ("faq-stage", "Does it happen in training or inference?", _stage),
    ("faq-confirm", "What is the cheapest way to confirm it?", _cheapest),
    ("faq-fingerprint", "Which log line identifies it?", _fingerprint),
    ("faq-time", "How long does the fix take?", _time),
    ("faq-code", "Is there working code for the fix?", _code),
    ("faq-recur", "Will it come back after the fix?", _recur),
    ("faq-next", "Which related failures should I check next?", _next),
]


def questions(page: Page) -> list[Question]:
    """The entry's own questions first, then each templated one that the data can answer."""
    asked = [
        Question(item.q, block(item.a), f"faq-{i + 1}") for i, item in enumerate(page.entry.faq)
    ]
    for anchor, question, answer in _ASKED:
        text = answer(page)
        if text is not None:
            asked.append(Question(question, text, anchor))
    return asked
