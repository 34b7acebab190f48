"""The entry format as typed, immutable records. The same classes validate YAML and export the
JSON Schema (schema.py), so the schema editors see is the one the build enforces."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
)
from pydantic_core import PydanticCustomError

from .text import prose_problem

SLUG_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"

Severity = Literal["low", "medium", "high", "critical"]
SEVERITIES: tuple[Severity, ...] = ("critical", "high", "medium", "low")
Stage = Literal["training", "inference", "evaluation", "data-loading", "install"]
Layer = Literal["software", "configuration", "hardware", "data"]
RelationName = Literal["confused-with", "often-caused-by", "leads-to", "co-occurs-with", "see-also"]
Stack = Literal[
    "PyTorch",
    "Hugging Face",
    "Accelerate",
    "DeepSpeed",
    "Megatron-LM",
    "vLLM",
    "FSDP",
    "torchrun",
    "Slurm",
    "Shell",
    "Docker",
    "JAX",
    "Other",
]
Status = Literal["active", "retired"]
# What diagnose can read from a log's numbers alone (generator/diagnose/metrics.py: SIGNALS says
# what each means and how it is detected).
MetricSignal = Literal[
    "loss-flat",
    "loss-flat-at-ln2",
    "loss-zero",
    "loss-rises",
    "loss-climbs",
    "loss-nonfinite",
    "grad-norm-zero",
    "lr-zero",
    "memory-grows",
]


def _fail(message: str, fix: str) -> PydanticCustomError:
    return PydanticCustomError("entry", "{message}", {"message": message, "fix": fix})


def _prose(value: str) -> str:
    problem = prose_problem(value)
    if problem:
        raise _fail(*problem)
    return value


def _line(value: str) -> str:
    _prose(value)
    if "\n" in value.strip():
        raise _fail("text spans several lines", "write it on one line (use `>-` to fold lines)")
    return value


def _verbatim(value: str) -> str:
    if not value.strip():
        raise _fail("text is empty", "write the text, or remove the field if it is optional")
    return value


def _https(value: str) -> str:
    parts = urlsplit(value.strip())
    if parts.scheme != "https" or not parts.netloc or any(c.isspace() for c in value.strip()):
        raise _fail(
            f"`{value}` is not an https URL",
            "link the page over https (https://...), with no spaces",
        )
    return value.strip()


def _as_signature(value: Any) -> Any:
    return {"text": value} if isinstance(value, str) else value


MAX_SLUG = 80


def is_slug(text: str) -> bool:
    """An id, tag or category folder name: lower-case ASCII letters and digits in
    hyphen-separated words, at most MAX_SLUG characters."""
    return len(text) <= MAX_SLUG and text.isascii() and re.fullmatch(SLUG_PATTERN, text) is not None


Slug = Annotated[StrictStr, Field(pattern=SLUG_PATTERN, max_length=MAX_SLUG)]
Prose = Annotated[StrictStr, AfterValidator(_prose)]
Line = Annotated[StrictStr, AfterValidator(_line), Field(max_length=300)]
Verbatim = Annotated[StrictStr, AfterValidator(_verbatim)]
Url = Annotated[StrictStr, AfterValidator(_https)]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SignatureSource(Record):
    """Where a signature's text is printed from: one file of one release on the package index,
    which `encyclopedia verify` downloads and reads."""

    package: Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")] = Field(
        description="The package's name on the index, e.g. `transformers`."
    )
    version: Annotated[StrictStr, Field(pattern=r"^[0-9][0-9A-Za-z.+!-]*$")] = Field(
        description="A release of it, e.g. `4.57.6`."
    )
    file: Annotated[
        StrictStr, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_./+-]*$", max_length=200)
    ] = Field(
        description="The file in that release's wheel or sdist, e.g. `transformers/trainer.py`."
    )
    platform: Annotated[StrictStr, Field(pattern=r"^[a-z0-9_]+$")] | None = Field(
        default=None,
        description="The wheel of another platform, as pip names it (e.g. `macosx_11_0_arm64`), "
        "for text only that build holds; default: this machine's wheel, else the sdist.",
    )


class Signature(Record):
    text: Annotated[Verbatim, Field(max_length=300)] = Field(
        description="Error text copied from real output; `*` matches any run of characters."
    )
    weight: Annotated[StrictInt, Field(ge=1, le=10)] | None = Field(
        default=None, description="Score added when it matches (default 10, or 3 for context)."
    )
    context: StrictBool = Field(
        default=False,
        description="Counts only when a primary signature of the same entry matched too.",
    )
    when: Annotated[StrictStr, Field(max_length=100)] | None = Field(
        default=None,
        description="Matches only when this holds between captured sizes, e.g. `free < requested`.",
    )
    source: SignatureSource | None = Field(
        default=None,
        description="Where the text comes from, for a primary signature that no example log holds.",
    )

    @property
    def score(self) -> int:
        return self.weight or (3 if self.context else 10)


class Raised(Record):
    """A traceback that names this failure by its structure: the exception it ends with and a
    frame it passed through, whatever the message says (frames.py matches it)."""

    exception: Annotated[StrictStr, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=80)] = (
        Field(
            description="The exception's class name as a traceback's last line prints it, "
            "without its module: `OSError`, `OutOfMemoryError`."
        )
    )
    frame: Annotated[
        StrictStr,
        Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]*$", max_length=200),
    ] = Field(
        description="The end of a frame's file path, from a package folder on: "
        "`torch/serialization.py`, `peft/tuners/lora/` (any file under it)."
    )
    function: Annotated[StrictStr, Field(pattern=r"^[A-Za-z_<][A-Za-z0-9_<>]*$")] | None = Field(
        default=None, description="The frame's function, e.g. `save`; any function when omitted."
    )
    weight: Annotated[StrictInt, Field(ge=1, le=8)] = Field(
        default=6,
        description="Score added when it matches (default 6: alone, a low-confidence match; "
        "at most 8, medium).",
    )
    source: SignatureSource = Field(
        description="The release file of the frame: `encyclopedia verify` checks that it is "
        "there and defines the function."
    )


class Symptom(Record):
    symptom: Line = Field(description="What the reader sees.")
    cause: Prose = Field(description="The cause that explains this symptom.")
    signatures: tuple[
        Annotated[
            Signature, BeforeValidator(_as_signature, json_schema_input_type=str | Signature)
        ],
        ...,
    ] = Field(
        default=(),
        description="Text that shows this symptom: a match names this symptom and its cause.",
    )
    fix_step: Annotated[StrictInt, Field(ge=1)] | None = Field(
        default=None,
        description="The fix step (counted from 1 in `fix.steps`) that addresses this cause: "
        "when a log shows this symptom, diagnose leads with that step.",
    )


class CodeExample(Record):
    title: Line
    stack: Stack
    language: Annotated[StrictStr, Field(pattern=r"^[a-z0-9+#-]+$")] = "python"
    code: Verbatim
    why: Prose = Field(description="Why this code fixes the failure.")


class Fix(Record):
    summary: Prose
    steps: Annotated[tuple[Prose, ...], Field(min_length=1)]
    code: tuple[CodeExample, ...] = ()


class Question(Record):
    q: Line
    a: Prose


class Related(Record):
    id: Slug
    relation: RelationName
    why: Prose


class Example(Record):
    source: Url = Field(description="The public thread the log was posted in.")
    log: Verbatim = Field(description="The log excerpt, copied as posted.")


Need = Literal["cpu", "cuda"]
Expect = Literal["fails", "runs"]
CURRENT_SET = "current"


class SetRun(Record):
    """One set of releases a reproducer runs on, and what the failing script does there: a
    version boundary is two of these, `fails` on one side and `runs` on the other."""

    set: Slug = Field(
        description="`current` (scripts/reproduce-requirements.txt) or the name of a file in "
        "scripts/reproduce-sets/ that pins other releases over it."
    )
    expect: Expect = Field(
        default="fails",
        description="`fails`: the failing script stops with this entry's error; `runs`: on "
        "these releases it runs to the end without it (the failure is not there).",
    )
    note: Line | None = Field(
        default=None, description="What differs on these releases, for the page, in one line."
    )


def _one_run_per_set(runs: tuple[SetRun, ...]) -> tuple[SetRun, ...]:
    names = [run.set for run in runs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise _fail(f"set `{twice[0]}` is listed twice", "list each set of releases once")
    if runs and not any(run.expect == "fails" for run in runs):
        raise _fail(
            "no set shows the failure",
            "mark the releases where the failing script fails with `expect: fails`",
        )
    return runs


class Reproduce(Record):
    """A script that triggers the failure and a variant with the entry's fix applied, run by
    `encyclopedia reproduce` against a real PyTorch."""

    about: Line = Field(description="What the failing script does, in one line.")
    needs: Need = Field(
        default="cpu",
        description="`cpu`: runs anywhere (CI runs it); `cuda`: needs a GPU (run with --gpu).",
    )
    processes: Annotated[StrictInt, Field(ge=1, le=8)] = Field(
        default=1, description="How many processes the script starts itself (e.g. gloo ranks)."
    )
    packages: tuple[Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")], ...] = (
        Field(default=(), description="Import names it needs besides torch, e.g. `safetensors`.")
    )
    timeout: Annotated[StrictInt, Field(ge=5, le=600)] = Field(
        default=120, description="Seconds each script may run."
    )
    failing: Verbatim = Field(description="Python that must fail with this entry's error.")
    fixed: Verbatim = Field(description="The same program with the fix applied: must succeed.")
    sets: Annotated[tuple[SetRun, ...], AfterValidator(_one_run_per_set)] = Field(
        default=(),
        description="The sets of releases to run on, each with what the failing script does "
        "there; default: `current`, where it fails.",
    )

    @property
    def runs(self) -> tuple[SetRun, ...]:
        """The sets to run on, in the entry's order (the current releases when none is named)."""
        return self.sets or (SetRun(set=CURRENT_SET),)


class AppliesTo(Record):
    versions: tuple[Line, ...] = ()
    hardware: tuple[Line, ...] = ()
    fixed_in: Line | None = None


class Reference(Record):
    title: Line
    url: Url


class Entry(Record):
    """One failure. Its id is the file name; `category` is the folder it lives in."""

    id: Slug | None = Field(default=None, description="Optional; must equal the file name.")
    title: Line
    phrases: tuple[Annotated[Line, Field(max_length=80)], ...] = Field(
        default=(),
        description="What people type when they describe this failure in their own words "
        "(search box, `encyclopedia search`), in any language: 'loss is nan with fp16', "
        "'显存不足'. Not error text: that goes in signatures.",
    )
    summary: Prose = Field(description="The quick answer: cause and fix in two or three sentences.")
    severity: Severity
    tags: Annotated[tuple[Slug, ...], Field(min_length=1)]
    affects: Annotated[tuple[Line, ...], Field(min_length=1)]
    stage: Annotated[tuple[Stage, ...], Field(min_length=1)]
    layer: Layer | None = None
    fix_time: Line | None = None
    description: Prose
    mechanism: Prose
    observe: tuple[Prose, ...] = ()
    symptoms: Annotated[tuple[Symptom, ...], Field(min_length=1)]
    # Empty for a failure no printed text identifies (a run that does not learn): the matcher
    # must not guess it from generic words.
    signatures: tuple[
        Annotated[
            Signature, BeforeValidator(_as_signature, json_schema_input_type=str | Signature)
        ],
        ...,
    ] = ()
    raised: tuple[Raised, ...] = Field(
        default=(),
        description="Tracebacks that name this failure by the exception and a frame it passed "
        "through, for messages worded in ways no signature holds.",
    )
    metric_signals: tuple[MetricSignal, ...] = Field(
        default=(),
        description="Patterns in logged numbers that point here (loss-flat, loss-rises, "
        "grad-norm-zero, lr-zero, memory-grows...): diagnose names the entry when a log shows "
        "one, with the lines and values as evidence.",
    )
    root_cause: Prose
    confirm: Annotated[tuple[Prose, ...], Field(min_length=1)]
    fix: Fix
    prevention: tuple[Prose, ...] = ()
    faq: tuple[Question, ...] = ()
    production: Prose | None = None
    related: tuple[Related, ...] = ()
    examples: tuple[Example, ...] = ()
    applies_to: AppliesTo | None = None
    reproduce: Reproduce | None = None
    references: Annotated[tuple[Reference, ...], Field(min_length=1)]
    aliases: tuple[Slug, ...] = ()
    status: Status = "active"
    replaced_by: Slug | None = None


class TagVocabulary(Record):
    """`entries/_tags.yaml`: every tag entries may use, each with a line saying what it covers."""

    tags: Annotated[dict[StrictStr, Line], Field(min_length=1)]


class CommonFailures(Record):
    """`entries/_common.yaml`: the failures readers meet most, most common first. The home page
    lists them, and category and tag pages put them ahead of the rest in this order."""

    common: Annotated[tuple[Slug, ...], Field(min_length=1, max_length=40)]


class Category(Record):
    title: Line
    description: Prose
    order: StrictInt = 100
