"""Does an answer sentence say what its passage says? Checks of what a claim asserts.

The grounding check (grounding.py) asks whether a sentence's words and meaning are close to
a passage; a small model's wrong answers usually pass it, because they reuse the passage's
own words ("lists are immutable" beside "tuples are immutable", "1024 bytes" beside
"1000 characters"). These checks look at what such a sentence gets wrong:

- exact things: numbers (with the unit after them), code and identifiers, file names and
  quoted strings must appear in the passages the sentence relies on, or in the question;
- quotations: a passage the answer quotes must hold the quoted words;
- polarity: a clause that shares its subject with a passage sentence must not carry the
  opposite word (mutable/immutable, faster/slower, un-/im-/in-/non- forms) or the opposite
  negation;
- verdicts: a "Yes"/"No" to a yes/no question must not pass a judgement of the question ("safe",
  "accurate") that no passage makes ("Yes, … is safe if …" where no passage says "safe"); a "Yes"
  that goes on to deny what was asked ("Yes, … should not be …") is found here and dropped by
  answer_tidy, which keeps the claim;
- order: a comparison must not swap its sides ("CHUNK_SIZE … smaller than CHUNK_OVERLAP"
  beside "CHUNK_OVERLAP must be … smaller than CHUNK_SIZE"): same words, reversed relation;
- places: a page or a file the sentence names ("stated in passage [2] on page 4 of
  settings.docx") must be where the passages it cites come from. The exact check alone let
  such a sentence pass, because "4" and the file name stand in some other passage's label.

Hand-written because it is small and rule-based: the NLI models that could judge entailment
are far larger than the answer model itself, and none installs offline here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from answer_render import cited_numbers
from grounding import CITATION, QUOTATION, QUOTATION_MIN_WORDS, content_terms
from keyword_index import tokenize

UNITS = (
    "%|percent|bytes?|[kmgt]i?b|kilobytes?|megabytes?|gigabytes?|bits?|characters?|chars?|tokens?|words?|lines?|"
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
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_NEGATIONS = frozenset({"not", "no", "never", "cannot", "neither", "nor", "nothing", "nobody"})
_CLAUSE_BREAK = re.compile(r"[,;:]\s+|\s+(?:while|whereas|but|however|although)\s+", re.I)

OPPOSITES = {
    "mutable": "immutable", "true": "false", "faster": "slower", "larger": "smaller", "bigger": "smaller",
    "more": "fewer", "increase": "decrease", "increases": "decreases", "before": "after", "first": "last",
    "always": "never", "possible": "impossible", "valid": "invalid", "same": "different", "equal": "unequal",
    "local": "global", "shallow": "deep", "inside": "outside", "minimum": "maximum", "positive": "negative",
    "open": "closed", "allowed": "forbidden", "enabled": "disabled", "higher": "lower", "longer": "shorter",
    "left": "right", "start": "end", "visible": "invisible", "sorted": "unsorted", "ordered": "unordered",
    "hashable": "unhashable", "supported": "unsupported", "required": "optional", "on": "off",
}
OPPOSITES.update({b: a for a, b in list(OPPOSITES.items())})
_PREFIXES = ("un", "im", "in", "non", "ir", "il", "dis")
# Set phrases whose opposite-looking word states nothing ("more useful than it seems at first"):
# left in, "first" was read as contradicting a passage's "last two digits".
_IDIOMS = re.compile(
    r"\b(?:at first|at last|at least|at most|first of all|on the other hand|at the same time|more or less"
    r"|right away|all right|in the end|from start to finish|sooner or later)\b",
    re.IGNORECASE,
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
    allowed_numbers = {n for n, _ in _numbers(f"{evidence}\n{question}")}
    problems: list[str] = []
    for number, unit in _numbers(claim):
        if number not in allowed_numbers:
            problems.append(f"the number {number} is not in the passage")
        elif unit and unit not in allowed and unit.rstrip("s") not in allowed:
            problems.append(f"the passage gives {number} in other units than {unit}")
    spans = [m.group(1) for m in _CODE_SPAN.finditer(claim)]
    spans += [m.group(1) or m.group(2) for m in _QUOTED.finditer(claim)]
    spans += [m.group(0) for m in _IDENTIFIER.finditer(_CODE_SPAN.sub(" ", claim))]
    for span in spans:
        key = _normal(span).strip(" .").removesuffix("()")
        if key and not CITATION.fullmatch(span.strip()) and key not in allowed and not _parts_named(key, allowed):
            problems.append(f"`{span.strip()}` is not in the passage")
    return list(dict.fromkeys(problems))


_DOTTED = re.compile(r"[a-z_]\w*(?:\.[a-z_]\w*)+")


def _parts_named(key: str, allowed: str) -> bool:
    """A dotted name whose every part the passage names as a word: `collections.Counter` beside
    "Counter, defined in the collections module" (a model writes the full name the passage spells out)."""
    if not _DOTTED.fullmatch(key):
        return False
    return all(re.search(rf"(?<![\w.]){re.escape(part)}(?!\w)", allowed) for part in key.split("."))


def _words(text: str) -> list[str]:
    text = text.replace("’", "'")  # PDFs and typeset text write "doesn’t"
    return [w.lower().strip("'-") for w in _WORD.findall(text.replace("n't", " not"))]


def _opposite_forms(word: str) -> set[str]:
    """Words that say the opposite of `word`: a listed opposite, or a negating prefix added or removed."""
    forms = {OPPOSITES[word]} if word in OPPOSITES else set()
    if len(word) >= 5:
        forms.update(p + word for p in _PREFIXES)
        for p in _PREFIXES:
            if word.startswith(p) and len(word) - len(p) >= 4:
                forms.add(word[len(p):])
    return forms


def polarity_conflicts(claim: str, evidence_sentences: Sequence[str]) -> list[str]:
    """Clauses of `claim` that flip a passage sentence about the same subject."""
    problems: list[str] = []
    clauses = [c for s in evidence_sentences for c in _CLAUSE_BREAK.split(s)]
    evidence = [(set(_words(c)), set(tokenize(c))) for c in clauses]
    for clause in _CLAUSE_BREAK.split(_IDIOMS.sub(" ", CITATION.sub(" ", claim))):
        words = _words(clause)
        terms = set(tokenize(clause))
        if len(terms) < 2:
            continue
        for word in set(words):
            subject = terms - set(tokenize(word))
            for ev_words, ev_terms in evidence:
                if word in ev_words or len(subject & ev_terms) < min(2, len(subject)):
                    continue  # a clause about something else: one shared word ("letters") is not the same subject
                flipped = _opposite_forms(word) & ev_words
                if flipped and not any(word in w and subject & t for w, t in evidence):
                    problems.append(f"says “{word}” where the passage says “{sorted(flipped)[0]}”")
                    break
        negated = bool(_NEGATIONS & set(words))
        if negation_flipped(terms, negated, evidence):
            problems.append("negates what the passage says" if negated else "drops the passage's negation")
    return list(dict.fromkeys(problems))


def negation_flipped(terms: set[str], negated: bool, evidence: Sequence[tuple[set[str], set[str]]]) -> bool:
    """Whether the passage clauses closest to a claim clause (most shared terms, at least 2 and 3/4 of
    the clause's) all carry the opposite negation. Only the closest: "If you are not familiar with
    bitwise operators" was read as negating "you can read about them at …/BitwiseOperators" beside
    the passage's own "If you are not familiar with bitwise operators", and a right answer was set aside."""
    close = [(len(terms & ev_terms), bool(_NEGATIONS & ev_words)) for ev_words, ev_terms in evidence]
    close = [(shared, ev_negated) for shared, ev_negated in close if shared >= 2 and shared >= 0.75 * len(terms)]
    if not close:
        return False
    most = max(shared for shared, _ in close)
    return all(ev_negated != negated for shared, ev_negated in close if shared == most)


YES_NO = re.compile(r"^\W*(yes|no|not)\b[\s,.:;!-]*", re.IGNORECASE)


def verdict_conflicts(claim: str, question: str, evidence_sentences: Sequence[str]) -> list[str]:
    """A "Yes" or "No" that its evidence contradicts: the evidence sentence about the thing asked opens
    with the other verdict ("Not by default: …" beside "Yes, by default …"), or it negates one of the
    question's own words ("They do not use getaddrinfo" beside "Does it use getaddrinfo? Yes").

    That sentence is found by the question's rarest content terms ("Does" and "'s" are none) (the claim's own words when the question is
    not a yes/no one): the evidence may name its subject by a pronoun, and a claim's paraphrase may
    share little with it. A negation only contradicts a "Yes": "No, it uses Timsort" is right beside a
    positive sentence about something else. A negation over another word ("hidden files are not
    indexed" for "Does it skip hidden files?") denies nothing asked."""
    opening = YES_NO.match(CITATION.sub(" ", claim))
    said = opening.group(1).lower() if opening else "not"
    if said == "not" or _NEGATIONS & set(_words(question)):
        return []  # "Doesn't it …?": a yes agrees with a negation
    asked = content_terms(question if asks_yes_no(question) else claim[opening.end() :] if opening else "")
    best = _most_about(asked, evidence_sentences)
    if best is None:
        return []
    rest = content_terms(claim[opening.end() :]) if opening else set()
    if len(rest & content_terms(best)) < 0.5 * len(rest):
        return []  # the claim says something else ("Yes, setting X makes it reachable" beside "Not by default")
    stated = YES_NO.match(best)
    if stated is not None:
        if (stated.group(1).lower() == "yes") != (said == "yes"):
            return [f"says “{said}” where the passage says “{' '.join(best.split()[:3]).rstrip(',.:;!-')}”"]
        return []
    words = _words(best)
    verbs = {form for w in _words(question) for form in _forms(w)}
    for i, word in enumerate(words):
        governed = [j for j in (i + 1, i + 2) if j < len(words) and _forms(words[j]) & verbs and set(tokenize(words[j])) & asked]
        if said == "yes" and word in _NEGATIONS and governed:
            return [f"says “Yes” where the passage says “{' '.join(words[i : governed[0] + 1])}”"]
    return []


def _most_about(terms: set[str], sentences: Sequence[str]) -> str | None:
    """The sentence holding the most of `terms`, each weighted by how few sentences hold it; None
    when none holds two."""
    held = [(s, terms & content_terms(s)) for s in (CITATION.sub(" ", s) for s in sentences)]
    spread = {t: sum(t in shared for _, shared in held) for t in terms}
    ranked = [(sum(1 / spread[t] for t in shared), s) for s, shared in held if len(shared) >= 2]
    return max(ranked)[1] if ranked else None


def _forms(word: str) -> set[str]:
    """A word and its forms without a verb ending ("uses", "used" -> "use"), not its derivations
    ("indexer" stays): a stem would read "not indexed" as denying a question about the indexer."""
    return {word} | {word[: -len(end)] for end in ("s", "es", "d", "ed") if word.endswith(end) and len(word) > len(end) + 2}


_ASKS_YES_NO = re.compile(
    r"^\W*(?:and\s+|so\s+|but\s+)?(?:is|are|was|were|am|can|could|does|do|did|will|would|should|shall|may|might|must|has|have|had)"
    r"(?:n't)?\b",
    re.IGNORECASE,
)


def asks_yes_no(question: str) -> bool:
    """Whether the question is answered by a yes or a no ("Does …?", "Can …?")."""
    return bool(_ASKS_YES_NO.match(question))


# Judgements a user acts on, which a small model hands out from its own knowledge: "is it safe?", "is it
# accurate?". Only these: a question's other words (its subject, "colleagues' computers") are the user's own
# way of naming what the passages name otherwise, and an answer may repeat them.
_JUDGEMENTS = frozenset(tokenize(
    "safe safely unsafe secure securely insecure private reliable unreliable accurate trustworthy recommended "
    "dangerous risky harmful legal illegal stable unstable"
))


def unbacked_verdicts(claim: str, question: str, passages: str) -> list[str]:
    """A "Yes" or "No" to a yes/no question that asserts a judgement of the question ("safe",
    "accurate", `_JUDGEMENTS`) no passage makes.

    Seen in the browser: "is that safe?" (about opening the web interface to colleagues) got "Yes,
    opening the web interface from colleagues' computers is safe if GRADIO_SERVER_NAME=0.0.0.0 is
    set …" beside the FAQ's "Do this only on a network you trust": no passage says "safe", the
    verdict is the model's own, and the rest of the sentence, the passage's words, passed every
    other check. The passages are read (keyword_index.tokenize) only for such an answer."""
    opening = YES_NO.match(CITATION.sub(" ", claim))
    if opening is None or opening.group(1).lower() not in ("yes", "no") or not _ASKS_YES_NO.match(question):
        return []
    judged = set(tokenize(question)) & _JUDGEMENTS
    unheld = judged - set(tokenize(passages)) if judged else set()
    for word in _words(claim[opening.end() :]):
        if set(tokenize(word)) & unheld:
            return [f"says “{opening.group(1)}” on “{word}”, which no passage says"]
    return []


_CONTRAST = re.compile(r"\b(?:but|however|although|though|except|unless|only|whereas|while)\b", re.IGNORECASE)
_ASKED_NEGATED = re.compile(r"^\W*\w+n't\b|^\W*\w+\s+(?:\w+\s+)?not\b", re.IGNORECASE)
_DENIED_WORDS = 6


def denying_yes(claim: str, question: str) -> list[str]:
    """A "Yes" whose own sentence then denies what the question asks, with the question's own verb:
    "Should web content be owned by www-data?" answered "Yes, web content should not be owned by
    www-data." (seen with a real document). The verdict and the claim contradict each other; the
    claim is the passages' words, which the other checks read (answer_tidy drops the "Yes").

    Only a denial of what was asked counts: the words after it must share one with the question
    ("Yes, the file is read, and files that are not text are skipped" denies nothing asked). A
    denial after "but", "except" or "only" is another claim beside the "Yes" ("Yes, but you cannot
    …"), and a negated question ("Shouldn't …?") has no plain yes, so neither counts; "not only"
    adds, it does not deny."""
    opening = YES_NO.match(CITATION.sub(" ", claim))
    asked = _ASKS_YES_NO.match(question)
    if opening is None or opening.group(1).lower() != "yes" or asked is None or _ASKED_NEGATED.search(question):
        return []
    verb = asked.group(0).split()[-1].lower()
    denial = rf"\b{verb}(?:\s+not\b(?!\s+(?:only|just)\b)|n't\b)" + (r"|\bcannot\b|\bcan't\b" if verb == "can" else "")
    rest = opening.string[opening.end() :]
    found = re.search(denial, rest, re.IGNORECASE)
    if found is None or _CONTRAST.search(rest[: found.start()]):
        return []
    denied = " ".join(rest[found.end() :].split()[:_DENIED_WORDS])
    if not content_terms(denied) & content_terms(question):
        return []
    return [f"says “Yes” and then “{found.group(0)}”"]


# The comparatives whose opposite says the same with the sides swapped ("A smaller than B" = "B larger than A").
_LESS = {"smaller": "size", "less": "size", "fewer": "size", "lower": "size", "shorter": "size", "slower": "speed", "earlier": "time"}
_MORE = {"larger": "size", "greater": "size", "more": "size", "bigger": "size", "higher": "size", "longer": "size", "faster": "speed", "later": "time"}
_COMPARISON = re.compile(rf"\b(?:(more|less|fewer)\s+(?!than\b)([a-z]+)|({'|'.join(sorted({*_LESS, *_MORE}))}))\s+than\b", re.IGNORECASE)
_SIDE_WORDS = 8
SAME_COMPARISON = 2 / 3
_CONDITION = re.compile(r"\b(?:if|when|whenever|until|unless|while|whether)\b", re.IGNORECASE)
_ASSERTING = re.compile(r"\b(?:is|are|was|were|be|been|being|isn't|aren't|runs?|gets?|grows?|becomes?)\b", re.IGNORECASE)
_SIDE_END = re.compile(r"[,;:.!?()]|\s(?:and|but|or|while|whereas|so|because|if|when)\s", re.IGNORECASE)


@dataclass(frozen=True)
class Comparison:
    """"A <comparative> than B", turned so that the relation reads "more": (what, bigger side, smaller side)."""

    what: str
    more: frozenset[str]
    less: frozenset[str]


def comparisons(sentence: str) -> list[Comparison]:
    """The comparisons a sentence asserts ("A is smaller than B"), each side as the few terms before
    "<comparative> than" and after it. A comparison with no verb before it ("files larger than 10 MB
    are skipped") names a kind of thing, and one after "if" or "until" is a condition: neither asserts
    a relation, so none is returned for them."""
    plain = CITATION.sub(" ", sentence)
    found, start = [], 0
    for m in _COMPARISON.finditer(plain):
        lead = " ".join(plain[start : m.start()].split()[-2 * _SIDE_WORDS :])  # "X is …; it must be … but smaller"
        rest = plain[m.end() :]
        end = _SIDE_END.search(rest)
        before, after = set(tokenize(lead)), set(tokenize(" ".join(rest[: end.start() if end else len(rest)].split()[:_SIDE_WORDS])))
        start = m.end()
        if not before or not after or not _ASSERTING.search(lead) or _CONDITION.search(lead):
            continue
        word = (m.group(1) or m.group(3)).lower()
        what = f"{_LESS.get(word) or _MORE.get(word)}:{(m.group(2) or '').lower()}"
        less = word in _LESS
        found.append(Comparison(what, frozenset(after if less else before), frozenset(before if less else after)))
    return found


def _same_things(claim: frozenset[str], passage: frozenset[str]) -> bool:
    shared = len(claim & passage)
    return shared >= max(2, SAME_COMPARISON * len(claim), len(passage) / 2)


def reversed_comparisons(claim: str, evidence_sentences: Sequence[str]) -> list[str]:
    """A comparison of `claim` that a passage sentence makes with the sides the other way round, and
    no passage sentence makes the claim's way. The two must compare the same things: most of the
    claim's terms and half the passage's, sides together (abstracts say "patients weighed more
    than controls" and "patients' ATP levels were lower than those of controls" side by side)."""
    made = [(sentence, e) for sentence in evidence_sentences for e in comparisons(sentence)]
    for c in comparisons(claim):
        terms = c.more | c.less
        alike = [(s, e) for s, e in made if e.what == c.what and _same_things(terms, e.more | e.less)]
        swapped = [sentence for sentence, e in alike if (c.more & e.less) - c.less and (c.less & e.more) - c.more]
        if swapped and not any((c.more & e.more) - c.less and (c.less & e.less) - c.more for _, e in alike):
            return [f"reverses the passage's comparison “{' '.join(swapped[0].split()[:12])}”"]
    return []


QUOTE_MIN_HELD = 0.8
"""Share of a quotation's words (stemmed, no stop words) the passages must hold: a verbatim quote holds all,
a quote with a word or two changed still passes, a passage the model made up holds about half."""


def invented_quotations(text: str, passages: str, question: str = "") -> list[str]:
    """Quotations of five words or more ("The passage explains: “…”") whose words the passages do not
    hold: the model presents as the documents' own words a text it wrote itself (seen in the browser:
    a made-up paragraph on pytest "quoted" from a user guide that never names it). Checked on the
    whole answer, since a quotation can span sentences."""
    known = set(tokenize(f"{passages}\n{question}"))
    invented = []
    for match in QUOTATION.finditer(CITATION.sub(" ", text)):
        words = tokenize(match.group(1))
        if len(words) >= QUOTATION_MIN_WORDS and sum(w in known for w in words) / len(words) < QUOTE_MIN_HELD:
            invented.append(match.group(1))
    return invented


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

    @classmethod
    def of(cls, label: str, text: str = "") -> Place:
        source, _, location = label.partition(", ")
        pages = _PAGE_NAMED.match(location.strip())
        span = _page_span(int(pages.group(1)), int(pages.group(2) or pages.group(1))) if pages else set()
        return cls(source.rsplit("/", 1)[-1].lower(), frozenset(span), text)


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
            return [f"{_cited(pool)} not from {sorted(named)[0]}"]  # cited: with every passage in the pool, one fits
        pool = fitting
    spoken = " ".join([question, *(places[n - 1].text for n in pool)])
    said = {page for low, high in _pages_named(spoken) for page in _page_span(low, high)}
    problems: list[str] = []
    for low, high in _pages_named(plain):
        wanted = _page_span(low, high)
        if not wanted & said and not any(wanted & places[n - 1].pages for n in pool):
            problems.append(f"{_cited(pool)} not on page {low}" if cited else f"no passage is on page {low}")
    return problems


def _cited(numbers: Sequence[int]) -> str:
    return f"passage [{numbers[0]}] is" if len(numbers) == 1 else f"passages {''.join(f'[{n}]' for n in numbers)} are"


def check_claims(
    claims: Sequence[tuple[str, Sequence[str]]], passages: str, question: str = "", places: Sequence[Place] = ()
) -> list[Disagreement]:
    """Each (sentence, sentences of the passages it relies on) checked; the problems found, one per sentence.

    Exact things are looked up in all the passages (a right number cited to the wrong passage
    is still the documents' number); polarity only in the passages the sentence relies on; a
    named page or file in the `places` of the passages the sentence cites.
    """
    found: list[Disagreement] = []
    for sentence, evidence_sentences in claims:
        problems = (
            exact_mismatches(sentence, passages, question)
            + polarity_conflicts(sentence, evidence_sentences)
            + unbacked_verdicts(sentence, question, passages)
            + verdict_conflicts(sentence, question, evidence_sentences)
            + reversed_comparisons(sentence, evidence_sentences)
            + place_mismatches(sentence, places, question)
        )
        if problems:
            found.append(Disagreement(sentence, "; ".join(problems)))
    return found

