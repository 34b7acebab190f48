"""The FAQ: the entry's own questions, and nothing else.

The page once added templated questions answered from the entry's fields (its layer, its stage,
the first confirm step, the signatures, the fix time, the code tabs, the first prevention item,
the related links). Each either repeated a section of the same page in other words or said
nothing about this failure ("Once confirmed, typically minutes"): the padding of the commercial
pages this project set out to beat. A question earns its place only when a contributor writes
an answer the page does not already give."""

from __future__ import annotations

from dataclasses import dataclass

from ..read.link import Page
from .escape import Md, block


@dataclass(frozen=True)
class Question:
    q: str
    a: Md
    anchor: str


def questions(page: Page) -> list[Question]:
    """The entry's own questions, in its order, each with a stable anchor."""
    return [
        Question(item.q, block(item.a), f"faq-{i + 1}") for i, item in enumerate(page.entry.faq)
    ]
