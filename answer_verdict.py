"""Whether the model's answer is shown, or set aside for the quotes.

The model's text, any loop cut from it (answer_tidy.py), is shown when it is non-empty, at least one of its claims is
backed by its evidence (answer_check.back_claim) and no claim names a number, name, page or file
the passages lack (answer_check.py). Otherwise the verbatim quotes stand as the answer, with a notice saying
why, and the model's text is kept for the user to open. A user is never shown a model's
claim the checks found wrong without that warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from answer_check import Disagreement, check_claims, says_nothing_new
from answer_render import citations, quotes_text, uncited
from answer_tidy import REPEATED_EARLIER, STOPPED, cite_outside_fences
from grounding import Grounding, split_sentences
from markdown_code import code_spans

NO_BACKING = "no passage backs what the model wrote"


@dataclass
class Verdict:
    shown: bool
    reason: str = ""
    disagreements: list[Disagreement] = field(default_factory=list)


def judge(
    text: str, grounding: Grounding | None, passages: Sequence[str], question: str, tidied: Sequence[str] = (),
    labels: Sequence[str] = (),
) -> Verdict:
    """Show the model's text, or set it aside with the reason a user reads.

    `labels` are the passages' places as the prompt showed them ("guide.pdf, page 3"): a
    model that repeats one names no number or file of its own."""
    if says_nothing_new(text, question):  # nothing, only "[1]" (seen in the browser), or the question said back
        said = uncited(text).strip(" \t\n.,;:")
        return Verdict(False, "it only restates the question" if said else "the model wrote no answer")
    if REPEATED_EARLIER in tidied:
        return Verdict(False, "the model repeated its earlier answer instead of answering this question")
    found = check_claims(split_sentences(text), held_text(passages, labels), question)
    if found:
        first = found[0]
        return Verdict(False, f"it does not match the passages: {first.reason}", found)
    if STOPPED in tidied:  # stopped for a sentence the checks found wrong: never shown cut short
        return Verdict(False, "the model was stopped at a sentence the passages do not hold")
    if grounding is not None and grounding.checked and not any(s.supported for s in grounding.checked):
        return Verdict(False, NO_BACKING)
    return Verdict(True)


def held_text(passages: Sequence[str], labels: Sequence[str] = ()) -> str:
    """What a claim's numbers, names and code are looked up in: the passages and the places the prompt showed."""
    return "\n".join([*passages, *labels])


def add_missing_citations(text: str, grounding: Grounding | None) -> str:
    """An answer that cites nothing gets the passages that back its claims, at its end.

    An answer that ends in a code block gets them on the prose before the block, or none
    without any (answer_tidy.cite_outside_fences): on the fence's line they would leave
    the fence open, and alone under the code they cite nothing a reader can see.
    """
    if citations(text) or grounding is None:
        return text
    numbers = sorted({n for s in grounding.checked for n in s.backing})
    if not numbers:
        return text
    text = text.rstrip()
    spans = code_spans(text)
    after_code = bool(spans) and spans[-1].fenced and spans[-1].end == len(text)
    cited = text + ("\n\n" if after_code else " ") + "".join(f"[{n}]" for n in numbers)
    return cite_outside_fences(cited).rstrip() if after_code else cited


def add_notice(answer: Any, notice: str) -> None:
    """Tell the user `notice` after what the answer already tells them (a long question searched by a part of it)."""
    answer.notice = f"{answer.notice} {notice}" if answer.notice else notice


def let_quotes_stand(answer: Any, reason: str) -> None:
    """Set the model's text aside, with the reason, and make the quotes the answer."""
    answer.set_aside = answer.text
    add_notice(answer, f"The model's answer was set aside: {reason}. The passages say:")
    answer.text = quotes_text(answer.quotes)
    answer.unsupported = []


def model_hint(model: str, ollama_model: str) -> str | None:
    """Said while the small embedded model answers: how to get better answers. `model` is a loaded
    backend's name ("llama.cpp:file.gguf") or, before one is loaded, llm_handler.answering_model's words."""
    if model.startswith("llama.cpp:"):
        name = model.split(":", 1)[1]
    elif " (embedded)" in model:
        name = model.split(" (embedded)", 1)[0]
    else:
        return None
    return (
        f"Answers come from the embedded {name}, a small model. For better answers, "
        f"install Ollama and run `ollama pull {ollama_model}`: docqa uses it when it runs."
    )
