"""Does an answer sentence say what its passage says? The exact checks of what a claim names.

The grounding check (grounding.py) asks whether a sentence's words and meaning are close to
a passage; a small model's wrong answers usually pass it, because they reuse the passage's
own words ("1024 bytes" beside "1000 characters"). These checks look at what such a sentence
names, which must be exact:

- numbers (with the unit after them), code and identifiers, file names and quoted strings must
  appear in the passages or in the question;
- a page or a file the sentence names ("stated in passage [2] on page 4 of settings.docx") must
  be where the passages it cites come from. The exact check alone let such a sentence pass,
  because "4" and the file name stand in some other passage's label;
- a "Yes" that goes on to deny what was asked ("Yes, … should not be …") is found here and
  dropped by answer_tidy, which keeps the claim.

The checks of meaning that stood here (opposite words and negations, yes/no verdicts against the
evidence, judgements no passage makes, swapped comparisons, made-up quotations) were deleted on
2026-12-06: switched off one at a time (bench/ablate.py), none changed an outcome on either half
of the dev pool at either context size, and the opposite-word check only set aside a right answer.

Hand-written because it is small and rule-based: the NLI models that could judge entailment
are far larger than the answer model itself, and none installs offline here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from answer_render import cite, cited_numbers, uncited
from grounding import CITATION, YES_NO_WORDS, content_terms, split_sentences

UNITS = (
    "%|percent|bytes?|octets?|[kmgt]i?b|kilobytes?|megabytes?|gigabytes?|bits?|characters?|chars?|tokens?|words?|lines?|"
    "pages?|digits?|elements?|items?|entries|rows?|columns?|frames?|files?|chunks?|passages?|"
    "ms|milliseconds?|seconds?|secs?|minutes?|mins?|hours?|days?|weeks?|months?|years?|"
    "mm|cm|km|m|kg|g|mhz|ghz|times|threads?|cores?"
)
_NUMBER = re.compile(rf"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?![\w])(?:\s*({UNITS})\b)?", re.I)
_CODE_SPAN = re.compile(r"`([^`\n]{1,80})`")
_QUOTED = re.compile(r"\"([^\"\n]{2,80})\"|(?<!\w)'([^'\n]{2,80})'(?!\w)")
_IDENTIFIER = re.compile(
    r"(?<![\w.])(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*\(\)|"  # call: f(), obj.method()
    r"(?<![\w.])[A-Za-z_]+\w*(?:_\w+)+|"  # snake_case
    r"(?<![\w.])[a-z]+[A-Z]\w*|"  # camelCase
    r"(?<![\w/.])[\w-]+\.(?:py|txt|md|json|csv|pdf|docx|yaml|yml|toml|cfg|ini|sh|html|js|ts)\b"  # file names
)


@dataclass
class Disagreement:
    sentence: str
    reason: str


_QUOTE_MARKS = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'", "`": None})


def _normal(text: str) -> str:
    return " ".join(text.lower().translate(_QUOTE_MARKS).split())


_LIST_MARKER = re.compile(r"(?m)^\s*\d{1,2}[.)](?=\s|$)")
"""The "1." of a numbered list item, which numbers the model's own steps: no claim to check."""


def _numbers(text: str) -> list[tuple[str, str]]:
    """(number without thousands commas, the word after it) for every number outside citations and list markers."""
    plain = _LIST_MARKER.sub(" ", CITATION.sub(" ", text))
    return [(m.group(0).split()[0].rstrip("%").replace(",", "").lstrip("+"), (m.group(1) or "").lower()) for m in _NUMBER.finditer(plain)]


def exact_mismatches(claim: str, evidence: str, question: str = "") -> list[str]:
    """Numbers, code, identifiers, file names and quoted strings of `claim` found in neither text."""
    allowed = _normal(f"{evidence}\n{question}")
    units_given: dict[str, set[str]] = {}
    for number, unit in _numbers(f"{evidence}\n{question}"):
        units_given.setdefault(number, set()).add(_unit_key(unit))
    problems: list[str] = []
    for number, unit in _numbers(claim):
        if number not in units_given:
            problems.append(f"the number {number} is not in the passage")
        elif unit and not _unit_given(unit, units_given[number], allowed):
            problems.append(f"the passage gives {number} in other units than {unit}")
    spans = [m.group(1) for m in _CODE_SPAN.finditer(claim)]
    spans += [m.group(1) or m.group(2) for m in _QUOTED.finditer(claim)]
    spans += [m.group(0) for m in _IDENTIFIER.finditer(_CODE_SPAN.sub(" ", claim))]
    for span in spans:
        key = _normal(span).strip(" .").removesuffix("()")
        if key and not CITATION.fullmatch(span.strip()) and key not in allowed and not _parts_named(key, allowed):
            problems.append(f"`{span.strip()}` is not in the passage")
    return list(dict.fromkeys(problems))


def _unit_key(unit: str) -> str:
    """A unit without its plural s ("bits" and "bit" are one unit; "ms" stays milliseconds)."""
    unit = unit.lower()
    return "%" if unit == "percent" else unit[:-1] if len(unit) > 2 and unit.endswith("s") else unit


def _unit_given(unit: str, given: set[str], allowed: str) -> bool:
    """Whether the passages give the number in `unit`: written with it, or written bare (a table's
    cell) with the unit named somewhere. A number the passages give only in other units fails even
    when the unit stands elsewhere in them ("256 bits" beside "256 octets" and "64 bits")."""
    if _unit_key(unit) in given:
        return True
    return "" in given and (unit in allowed or unit.rstrip("s") in allowed)


_DOTTED = re.compile(r"[a-z_]\w*(?:\.[a-z_]\w*)+")


def _parts_named(key: str, allowed: str) -> bool:
    """A dotted name whose every part the passage names as a word: `collections.Counter` beside
    "Counter, defined in the collections module" (a model writes the full name the passage spells out)."""
    if not _DOTTED.fullmatch(key):
        return False
    return all(re.search(rf"(?<![\w.]){re.escape(part)}(?!\w)", allowed) for part in key.split("."))


_PAGE_NAMED = re.compile(r"\b(?:pages?|pp?\.)\s*(\d{1,5})(?:\s*(?:[-–]|to|and)\s*(\d{1,5}))?", re.IGNORECASE)


def _page_span(low: int, high: int) -> set[int]:
    """The pages from `low` to `high`, at most a thousand and one of them: "pages 1-99999" names no page list worth building."""
    return set(range(low, min(high, low + 1000) + 1))


@dataclass(frozen=True)
class Place:
    """Where one passage comes from, as its label names it: the file and the pages ("guide.pdf, pages 3-4").

    Read from the label, not the passage's page numbers, on purpose: the label is what the prompt
    showed the model (a PDF page by the number the book prints on it), so it is the place a model
    that repeats a place can name.
    """

    file: str
    pages: frozenset[int]
    text: str
    label: str = ""
    """The place as the prompt and the source cards name it, for the user (`file` is lower case, for matching)."""

    @classmethod
    def of(cls, label: str, text: str = "") -> Place:
        source, _, location = label.partition(", ")
        pages = _PAGE_NAMED.match(location.strip())
        span = _page_span(int(pages.group(1)), int(pages.group(2) or pages.group(1))) if pages else set()
        return cls(source.rsplit("/", 1)[-1].lower(), frozenset(span), text, label)


def _pages_named(text: str) -> list[tuple[int, int]]:
    return [(int(m.group(1)), int(m.group(2) or m.group(1))) for m in _PAGE_NAMED.finditer(text)]


def place_mismatches(sentence: str, places: Sequence[Place], question: str = "") -> list[str]:
    """A page or a file `sentence` names that none of the passages it cites (all, if it cites none)
    comes from. Seen in the browser: "This is stated in passage [2] on page 4 of the
    docqa-configuration.docx file" beside an uploaded abstract in [2]; the page and the file were
    another passage's. A page the passages' own text or the question names ("see page 45") passes."""
    if not places:
        return []
    count = len(places)
    cited = cited_numbers(sentence, count)
    plain = CITATION.sub(" ", sentence)
    files = {p.file for p in places if "." in p.file}
    named = {f for f in files if re.search(rf"(?<![\w/.-]){re.escape(f)}(?![\w-])", plain.lower())}
    pool = cited or list(range(1, count + 1))
    if named:
        fitting = [n for n in pool if places[n - 1].file in named]
        if not fitting:
            return [f"it names {sorted(named)[0]}, but {_cited(pool, places)}"]  # cited: with every passage in the pool, one fits
        pool = fitting
    spoken = " ".join([question, *(places[n - 1].text for n in pool)])
    said = {page for low, high in _pages_named(spoken) for page in _page_span(low, high)}
    problems: list[str] = []
    for low, high in _pages_named(plain):
        wanted = _page_span(low, high)
        if not wanted & said and not any(wanted & places[n - 1].pages for n in pool):
            problems.append(f"it names page {low}, but {_cited(pool, places)}" if cited else f"no passage is on page {low}")
    return problems


def _cited(numbers: Sequence[int], places: Sequence[Place]) -> str:
    """Where the cited passages come from, by their labels: the numbers the model cited are the prompt's,
    which the source list under the answer renumbers, so a notice naming "[1]" would point at another card."""
    where = sorted({places[n - 1].label or places[n - 1].file for n in numbers})
    return f"the passage it cites is from {where[0]}" if len(where) == 1 else f"the passages it cites are from {'; '.join(where)}"


def check_claims(sentences: Sequence[str], passages: str, question: str = "", places: Sequence[Place] = ()) -> list[Disagreement]:
    """Each sentence checked; the problems found, one per sentence.

    Exact things are looked up in all the passages (a right number cited to the wrong passage
    is still the documents' number); a named page or file in the `places` of the passages the
    sentence cites.
    """
    found: list[Disagreement] = []
    for sentence in sentences:
        problems = exact_mismatches(sentence, passages, question) + place_mismatches(sentence, places, question)
        if problems:
            found.append(Disagreement(sentence, "; ".join(problems)))
    return found


COVERAGE = 0.5
"""The share of a sentence's content words that the passages backing it must hold."""


@dataclass(frozen=True)
class Judgement:
    """Whether a cited text stands: `text` re-cited to the passages that back it, or `reason` why not."""

    shown: bool
    reason: str = ""
    text: str = ""


def judge_text(text: str, passages: Sequence[str]) -> Judgement:
    """The one judge of a cited text (a summary's sentences): every sentence that says something must be
    backed by the passages it cites, or else by the fewest passages that back it, and is re-cited to
    them; one unbacked sentence sets the text aside. Backed: its numbers, names, code and quoted strings
    stand in those passages (`exact_mismatches`) and COVERAGE of its content words too."""
    shown, backed = text, False
    for sentence in split_sentences(text):
        body = uncited(sentence)
        if not content_terms(body) - YES_NO_WORDS:
            continue  # "[1]", "Yes.", a bullet: nothing to back
        named = cited_numbers(sentence, len(passages))
        problem = _unbacked(body, [passages[n - 1] for n in named]) if named else "a sentence cites no passage that holds it"
        backing = named if problem is None else _backing(body, passages)
        if not backing:
            return Judgement(False, problem or "")
        if backing != named:
            shown = shown.replace(sentence, cite(body, backing), 1)
        backed = True
    if not backed:
        return Judgement(False, "the model wrote no answer")
    return Judgement(True, text=shown)


def _unbacked(text: str, evidence: Sequence[str]) -> str | None:
    """Why `evidence` does not back `text`, or None when it does."""
    joined = "\n".join(evidence)
    exact = exact_mismatches(text, joined)
    if exact:
        return exact[0].replace("the passage", "its evidence")
    if covered_share(text, joined) < COVERAGE:
        return "its words are not those of the excerpts it names"
    return None


def _backing(text: str, passages: Sequence[str]) -> list[int]:
    """The fewest passages (1-based), most covering first, that back `text`; empty when all of them together do not."""
    if _unbacked(text, passages) is not None:
        return []
    ranked = sorted(range(1, len(passages) + 1), key=lambda n: -covered_share(text, passages[n - 1]))
    for size in range(1, len(ranked) + 1):
        if _unbacked(text, [passages[n - 1] for n in ranked[:size]]) is None:
            return sorted(ranked[:size])
    return list(range(1, len(passages) + 1))


def covered_share(text: str, evidence: str) -> float:
    """The share of the text's content words that the evidence holds (1.0 if none)."""
    words = content_terms(text) - YES_NO_WORDS
    if not words:
        return 1.0
    return len(words & content_terms(evidence)) / len(words)
