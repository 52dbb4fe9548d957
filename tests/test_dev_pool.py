"""The dev pool's questions (bench/dev_pool.jsonl) keep the shape the tune/check split relies on.

These read only the question file and the document list in bench/dev_pool.py, never the packaged
documents, so they run on any machine; `bench/dev_pool.py --verify` is the check against the texts.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load_bench():
    spec = importlib.util.spec_from_file_location("dev_pool", ROOT / "bench" / "dev_pool.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["dev_pool"] = module
    spec.loader.exec_module(module)
    return module


dev_pool = _load_bench()
ITEMS = dev_pool.load()
# The kinds the pool must cover; Markdown and plain text count as one, as do slides and sheets.
KIND_GROUP = {"markdown": "text", "text": "text", "xlsx": "office-table", "pptx": "office-table"}


def _document_of(item: dict) -> str:
    return item.get("source") or item["topic"]


def test_pool_is_big_and_varied_and_every_question_is_well_formed():
    documents = {_document_of(it) for it in ITEMS}
    kinds = {KIND_GROUP.get(dev_pool.BY_NAME[name].kind, dev_pool.BY_NAME[name].kind) for name in documents}
    assert len(ITEMS) >= 200
    assert len(documents) >= 12
    assert len(kinds) >= 6, kinds
    assert len({it["id"] for it in ITEMS}) == len(ITEMS)
    assert dev_pool.shape_failures(ITEMS) == []


def test_halves_split_by_whole_documents_and_each_covers_the_main_kinds():
    halves_of = {}
    for it in ITEMS:
        assert it["half"] in ("tune", "check")
        halves_of.setdefault(_document_of(it), set()).add(it["half"])
    assert all(len(halves) == 1 for halves in halves_of.values()), halves_of
    for half in ("tune", "check"):
        kinds = {dev_pool.BY_NAME[name].kind for name, halves in halves_of.items() if half in halves}
        assert {"pdf", "html"} <= kinds and kinds & {"markdown", "text"}, (half, kinds)
    share = Counter(it["half"] for it in ITEMS)["tune"] / len(ITEMS)
    assert 0.35 <= share <= 0.65


def test_about_one_question_in_seven_has_no_answer_in_the_documents():
    unanswerable = [it for it in ITEMS if it["kind"] == "unanswerable"]
    assert len(unanswerable) >= 30
    assert 0.10 <= len(unanswerable) / len(ITEMS) <= 0.20
    assert all(not it.get("source") and not it["must_contain"] for it in unanswerable)


def test_checker_reports_a_snippet_or_answer_term_missing_from_the_document():
    item = {"id": "q1", "source": "a.txt", "text": "The Quick fox", "must_contain": ["fox"], "kind": "fact"}
    assert dev_pool.text_failures([item], {"a.txt": "so the quick fox ran"}) == []
    assert dev_pool.text_failures([dict(item, must_contain=["wolf"])], {"a.txt": "so the quick fox ran"})
    # Present once whitespace is normalised, but not as `eval --qa` matches passages: a failure too.
    assert dev_pool.text_failures([item], {"a.txt": "so the quick\nfox ran"})


def test_slides_are_made_one_per_section_with_links_read_as_text():
    markdown = "# Title\n\n* [Part](#part)\n\n## Part\n\nSee the [guide][] and [site](https://x.org).\n\n[guide]: https://y.org\n"
    assert dev_pool.slide_sections(markdown) == [("Title", []), ("Part", ["See the guide and site."])]
