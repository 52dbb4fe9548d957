"""Telling names from common words, by the packaged tokenizer's vocabulary."""

from common_words import common_words, is_common, uncommon_words


def test_names_and_identifiers_are_uncommon_and_english_words_are_not():
    assert len(common_words()) > 20_000, "the packaged all-MiniLM-L6-v2 vocabulary is read"
    question = "How do I run several coroutines concurrently with asyncio and await in my Django project?"
    assert uncommon_words(question) == ["coroutines", "asyncio", "Django"]
    assert uncommon_words("Are my files uploaded to some cloud service, and where are the colleagues' settings?") == []


def test_other_forms_of_common_words_and_compounds_are_common_and_short_runs_are_skipped():
    assert all(is_common(w) for w in ("patching", "helpers", "stopped", "running", "quickly", "upload", "encrypted"))
    assert not is_common("pytest") and not is_common("asyncio")
    assert uncommon_words("Is copy.deepcopy slower than os.walk in py?") == [], "too short, or a dotted name's part"
    assert uncommon_words("Start partway through the subfolder of my MacBook") == ["MacBook"], "camel case is a name"
    assert uncommon_words("Instead of patching add_time, call add_time twice") == ["add_time"], "once each, as written"
