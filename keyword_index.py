"""The keyword side of retrieval: BM25 (bm25s) over the same chunks as the vector store.

Chunks live in a small SQLite table (text, position, pre-computed tokens), which is the
durable part; the BM25 matrix is derived from it, saved beside it with the table's
generation number, and rebuilt whenever the two disagree (after any change, or after a
crash between them). Tokens split `snake_case` and `camelCase` identifiers so a query
for `parse_config` or `ParseConfig` finds the code that defines it. A chunk's heading
path counts twice, a light field weighting: a heading names what the section is about.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from doc_types import Chunk
from errors import StoreError

log = logging.getLogger(__name__)

# Bump when tokenize() or index_text() changes: stored tokens are then rebuilt from the text.
TOKENIZER_VERSION = 6

_WORD = re.compile(r"\w+")
_VERSION = re.compile(r"(?<![\w.])[vV]?(\d+(?:\.\d+)+)(?![\w]|\.\d)")
"""A dotted number as written, "22.04", "1.1.0", "3.12": a release or version is named by the whole,
which its parts ("22", "04", common in every date) do not say."""
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SYMBOLS = re.compile(r"[^\w\s]+")
_FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
OPERATORS = frozenset(
    "// ** % ^ == != <= >= += -= *= /= //= %= **= &= |= ^= <<= >>= << >> >>> -> := @=".split()
)
"""Punctuation-only tokens worth a search: the operators people ask about ("what does // do?").
Single `+ - * / < > = | ~` are left out: hyphens, slashes, list markers, table rules and "about" use them;
so is `%` after a digit, a percent sign (1,274 SciFact abstracts hold one)."""
_ENCLOSING = "()[]{}'\"`“”‘’.,;:!?"


@functools.cache
def stopwords() -> frozenset[str]:
    """bm25s's English stop words, read from its `stopwords.py` alone.

    Importing the package runs its `__init__` (numba, scipy: about 0.5 s), which indexing a changed
    file otherwise never needs: the BM25 model is rebuilt on the next search, not at index time.
    """
    import importlib.util

    package = importlib.util.find_spec("bm25s")  # finds the package without running its __init__
    folders = list(package.submodule_search_locations or []) if package else []
    spec = importlib.util.spec_from_file_location("docqa_bm25s_stopwords", Path(folders[0]) / "stopwords.py") if folders else None
    if spec is None or spec.loader is None:  # pragma: no cover - an unusual install: import it the usual way
        from bm25s.stopwords import STOPWORDS_EN

        return frozenset(STOPWORDS_EN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return frozenset(module.STOPWORDS_EN)


_stemmer_local = threading.local()
ASKING_WORDS = "what which whom whose when where why how do does did can could should would shall may might must me my you your we our"
"""Words that shape a question but name nothing in the answer. bm25s keeps them (its stop words are
for text), so "What does setdefault do?" ranked pages holding "what" and "does" above the one
naming setdefault. They are left out of queries only; "who", "I" and "us" stay (WHO, type I, US)."""


def _stem(words: list[str]) -> list[str]:
    stemmer = getattr(_stemmer_local, "stemmer", None)
    if stemmer is None:
        import Stemmer

        stemmer = _stemmer_local.stemmer = Stemmer.Stemmer("english")
    return stemmer.stemWords(words)


def split_identifier(word: str) -> list[str]:
    """`parse_config` -> [parse, config]; `ParseConfig` -> [parse, config]; `HTTPServer` -> [http, server]."""
    parts: list[str] = []
    for piece in word.split("_"):
        parts.extend(p.lower() for p in _CAMEL.findall(piece))
    return [p for p in parts if p]


def symbol_tokens(text: str) -> list[str]:
    """Operators and command-line flags, exactly as written: `//`, `**`, `==`, `--reindex`.

    Words alone lose them (`\\w+` drops punctuation), yet a question naming one means that
    place. A run of punctuation counts when, stripped of brackets, quotes and sentence
    marks, it is an operator: not in a URL (`://`), `**` not as Markdown bold, `%` not as percent
    nor as a format specifier (`%M`, named by its letter).
    """
    found = [m.group().lower() for m in _FLAG.finditer(text)]
    for match in _SYMBOLS.finditer(text):
        run = match.group()
        if "://" in run:
            continue
        core = run.strip(_ENCLOSING)
        if core not in OPERATORS:
            continue
        if core == "**" and _is_bold_marker(text, match.start(), match.end()):
            continue
        if core == "%" and match.start() > 0 and text[match.start() - 1].isdigit():
            continue
        if core == "%" and text[match.end() : match.end() + 1].isalpha() and not text[match.start() - 1 : match.start()].isalnum():
            continue  # "%M", "%s": a format specifier, named by its letter, not the operator
        found.append(core)
    return found


def _is_bold_marker(text: str, start: int, end: int) -> bool:
    """`**bold**`: the run touches a word on one side only; `2**3`, `2 ** 3` and `f(**kwargs)` touch both or neither."""
    before = start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_")
    after = end < len(text) and (text[end].isalnum() or text[end] == "_")
    return before != after


def tokenize(text: str) -> list[str]:
    """Lower-cased, stop-word-free, stemmed tokens; identifiers add their parts as well, and
    operators and flags (symbol_tokens) are kept as written."""
    words: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group()
        lower = word.lower()
        if len(word) > 1 and ("_" in word.strip("_") or (not word.isupper() and not word.islower() and not word.istitle())):
            parts = split_identifier(word)
            if len(parts) > 1:
                words.append(lower.strip("_"))
                words.extend(parts)
                continue
        words.append(lower)
    stop = stopwords()
    words = [w for w in words if w not in stop and len(w) < 64]
    return (_stem(words) if words else []) + versions(text) + symbol_tokens(text)


def versions(text: str) -> list[str]:
    """The dotted numbers of `text` (`_VERSION`), kept whole beside their parts."""
    return _VERSION.findall(text)


def exact_terms(question: str) -> list[str]:
    """The tokens of what a question names exactly: `snake_case` and `UPPER_CASE` names, operators, flags.

    The embedding model reads `TOP_K` as "top", "_", "k" and `//` as nothing at all, so for
    these only an exact match says which passage is meant. CamelCase is left out: in prose
    it is mostly terms like mRNA, which are words, not names.
    """
    names = [m.group().lower().strip("_") for m in _WORD.finditer(question) if "_" in m.group().strip("_")]
    return list(dict.fromkeys((_stem(names) if names else []) + symbol_tokens(question)))


@functools.cache
def _asking_tokens() -> frozenset[str]:
    return frozenset(tokenize(ASKING_WORDS))


def query_tokens(question: str) -> list[str]:
    """The tokens a question is searched by: its tokens less the asking words; all of them if nothing else is left."""
    tokens = tokenize(question)
    content = [t for t in tokens if t not in _asking_tokens()]
    return content or tokens


def index_text(chunk: Chunk) -> str:
    """What BM25 sees for a chunk: the document title, the heading path, then the embedded text.

    Chunk.embedding_text() already leads with the heading path, so headings count twice:
    a light field weighting (a heading names what its section is about) that lifted page
    hit@1 on the Think Python questions and changes nothing for text without headings.
    """
    heading = " > ".join(chunk.heading_path)
    return f"{chunk.title}\n{heading}\n{chunk.embedding_text()}" if heading else f"{chunk.title}\n{chunk.embedding_text()}"


def _matches(meta: dict[str, Any], where: dict[str, Any] | None) -> bool:
    if not where:
        return True
    for key, wanted in where.items():
        value = meta.get(key)
        if isinstance(wanted, (list, tuple, set)):
            if value not in wanted:
                return False
        elif value != wanted:
            return False
    return True


class KeywordIndex:
    """Chunks in SQLite plus a BM25 index over their tokens, kept in step on every change."""

    def __init__(self, directory: Path, k1: float = 1.2, b: float = 0.75, read_only: bool = False) -> None:
        """`read_only`: beside the process that writes it. Then nothing is re-tokenized or saved, and the BM25
        matrix is built in memory from the table, never read from files the writer may be saving."""
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.k1, self.b = k1, b
        self.read_only = read_only
        self._lock = threading.RLock()
        try:
            self.db = sqlite3.connect(self.directory / "chunks.sqlite", check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(
                """
                CREATE TABLE IF NOT EXISTS chunks (
                    id TEXT PRIMARY KEY, source TEXT NOT NULL, ext TEXT NOT NULL,
                    chunk_index INTEGER NOT NULL, text TEXT NOT NULL, tokens TEXT NOT NULL,
                    meta TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS chunks_source ON chunks(source);
                CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                """
            )
            self.db.commit()
            if not read_only:
                self._retokenize_if_stale()
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"The keyword index in {self.directory} is unreadable ({exc}) — "
                "run `python main.py index --reindex` to rebuild it."
            ) from exc
        self._bm25: Any = None
        self._ids: list[str] = []
        self._meta: list[dict[str, Any]] = []
        self._loaded_generation = -1

    # ------------------------------------------------------------ writes

    def _bump(self) -> None:
        self.db.execute(
            "INSERT INTO state(key, value) VALUES('generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    def _retokenize_if_stale(self) -> None:
        """Tokens stored by an older tokenizer are rebuilt from the stored text, once."""
        row = self.db.execute("SELECT value FROM state WHERE key='tokenizer'").fetchone()
        if row and int(row[0]) == TOKENIZER_VERSION:
            return
        ids = [r[0] for r in self.db.execute("SELECT id FROM chunks")]
        chunks = self.get_chunks(ids)
        updates = [(" ".join(tokenize(index_text(chunk))), cid) for cid, chunk in chunks.items()]
        self.db.executemany("UPDATE chunks SET tokens = ? WHERE id = ?", updates)
        self.db.execute(
            "INSERT INTO state(key, value) VALUES('tokenizer', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (str(TOKENIZER_VERSION),),
        )
        if updates:
            self._bump()
            log.info("Re-tokenized %d chunks for keyword search (tokenizer version %d)", len(updates), TOKENIZER_VERSION)
        self.db.commit()

    def generation(self) -> int:
        row = self.db.execute("SELECT value FROM state WHERE key='generation'").fetchone()
        return int(row[0]) if row else 0

    def add_chunks(self, chunks: list[Chunk]) -> int:
        if not chunks:
            return 0
        rows = []
        for c in chunks:
            meta = {
                "title": c.title, "page": c.page, "page_label": c.page_label, "start_line": c.start_line,
                "end_line": c.end_line, "heading_path": c.heading_path,
                "slide": c.slide, "sheet": c.sheet, "rows": c.rows, "symbol": c.symbol,
                **({"ocr": True} if c.ocr else {}),
            }
            rows.append(
                (c.id, c.source, Path(c.source).suffix.lower().lstrip("."), c.chunk_index, c.text,
                 " ".join(tokenize(index_text(c))), json.dumps(meta, ensure_ascii=False))
            )
        with self._lock:
            self.db.executemany("INSERT OR REPLACE INTO chunks VALUES (?,?,?,?,?,?,?)", rows)
            self._bump()
            self.db.commit()
        return len(rows)

    def delete_source(self, source: str) -> int:
        with self._lock:
            cur = self.db.execute("DELETE FROM chunks WHERE source = ?", (source,))
            self._bump()
            self.db.commit()
            return cur.rowcount

    def delete_ids(self, ids: Iterable[str]) -> int:
        ids = list(ids)
        with self._lock:
            n = 0
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                cur = self.db.execute(f"DELETE FROM chunks WHERE id IN ({','.join('?' * len(part))})", part)
                n += cur.rowcount
            self._bump()
            self.db.commit()
            return n

    def reset(self) -> None:
        with self._lock:
            self.db.execute("DELETE FROM chunks")
            self._bump()
            self.db.commit()

    # ------------------------------------------------------------ reads

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def ids_by_source(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for cid, source in self.db.execute("SELECT id, source FROM chunks"):
            out.setdefault(source, set()).add(cid)
        return out

    def get_chunks(self, ids: list[str]) -> dict[str, Chunk]:
        out: dict[str, Chunk] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = self.db.execute(
                f"SELECT id, source, chunk_index, text, meta FROM chunks WHERE id IN ({','.join('?' * len(part))})",
                part,
            )
            for cid, source, index, text, meta in rows:
                m = json.loads(meta)
                out[cid] = Chunk(
                    id=cid, text=text, source=source, title=m.get("title", ""), chunk_index=index,
                    page=m.get("page"), page_label=m.get("page_label"), start_line=m.get("start_line"), end_line=m.get("end_line"),
                    heading_path=m.get("heading_path") or [],
                    slide=m.get("slide"), sheet=m.get("sheet"), rows=m.get("rows"), symbol=m.get("symbol"), ocr=bool(m.get("ocr")),
                )
        return out

    def positions(self, ids: list[str]) -> dict[str, tuple[str, int]]:
        """(source, chunk index) of each known chunk id: cheap, for neighbour lookups."""
        out: dict[str, tuple[str, int]] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = self.db.execute(f"SELECT id, source, chunk_index FROM chunks WHERE id IN ({','.join('?' * len(part))})", part)
            out.update((cid, (source, index)) for cid, source, index in rows)
        return out

    def terms_held(self, ids: list[str], terms: list[str]) -> dict[str, int]:
        """How many of `terms` (tokens) each chunk holds; chunks holding none are left out."""
        wanted = set(terms)
        out: dict[str, int] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = self.db.execute(f"SELECT id, tokens FROM chunks WHERE id IN ({','.join('?' * len(part))})", part)
            for cid, tokens in rows:
                held = len(wanted.intersection(tokens.split()))
                if held:
                    out[cid] = held
        return out

    def chunks_of_source(self, source: str) -> list[Chunk]:
        ids = [r[0] for r in self.db.execute("SELECT id FROM chunks WHERE source = ? ORDER BY chunk_index", (source,))]
        found = self.get_chunks(ids)
        return [found[i] for i in ids if i in found]

    # ------------------------------------------------------------ BM25

    def _ensure_fresh(self) -> None:
        generation = self.generation()
        if self._loaded_generation == generation and self._bm25 is not None:
            return
        with self._lock:
            generation = self.generation()
            if self.read_only or not self._load_saved(generation):
                self._rebuild(generation)

    def _load_saved(self, generation: int) -> bool:
        import bm25s

        folder = self.directory / "bm25"
        state_file = folder / "docqa_state.json"
        try:
            state = json.loads(state_file.read_text())
            if state.get("generation") != generation:
                return False
            self._bm25 = bm25s.BM25.load(str(folder), mmap=False) if state["ids"] else None
            self._ids = state["ids"]
            self._meta = state["meta"]
            self._loaded_generation = generation
            return True
        except (OSError, ValueError, KeyError):
            return False

    def _rebuild(self, generation: int) -> None:
        import bm25s

        ids, tokens, meta = [], [], []
        for cid, source, ext, toks in self.db.execute("SELECT id, source, ext, tokens FROM chunks ORDER BY rowid"):
            ids.append(cid)
            tokens.append(toks.split() or ["\x00empty"])
            meta.append({"source": source, "ext": ext})
        model = None
        if ids:
            model = bm25s.BM25(k1=self.k1, b=self.b)
            model.index(tokens, show_progress=False)
        self._bm25, self._ids, self._meta = model, ids, meta
        self._loaded_generation = generation
        if self.read_only:
            return
        folder = self.directory / "bm25"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if model is not None:
                model.save(str(folder))
            tmp = folder / "docqa_state.json.tmp"
            tmp.write_text(json.dumps({"generation": generation, "ids": ids, "meta": meta}))
            tmp.replace(folder / "docqa_state.json")
        except OSError as exc:  # the index still works from memory; it is rebuilt next start
            log.warning("Could not save the BM25 index in %s: %s", folder, exc)
        log.debug("Rebuilt BM25 index over %d chunks", len(ids))

    def idf(self, tokens: Iterable[str]) -> dict[str, float]:
        """BM25's inverse document frequency (Lucene's form) of each token the index holds; unknown tokens are left out."""
        frequencies = self.chunk_frequencies(set(tokens))
        with self._lock:
            n = len(self._ids)
        return {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in frequencies.items() if df > 0}

    def search(self, query: str, k: int, where: dict[str, Any] | None = None) -> list[tuple[str, float]]:
        """The k best (chunk id, BM25 score) pairs for the query; only chunks with a score > 0."""
        with self._lock:
            self._ensure_fresh()
            model, ids, meta = self._bm25, self._ids, self._meta
        if model is None:
            return []
        q = [t for t in query_tokens(query) if t in model.vocab_dict]
        if not q:
            return []
        scores = np.asarray(model.get_scores(q), dtype=np.float32)
        if where:
            mask = np.fromiter((_matches(m, where) for m in meta), dtype=bool, count=len(meta))
            scores = np.where(mask, scores, 0.0)
        k = min(k, int((scores > 0).sum()))
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top])]
        return [(ids[i], float(scores[i])) for i in top]

    def chunk_frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        """How many chunks hold each (tokenized) term; 0 for a term no chunk holds.

        A term few chunks hold names something specific (a product, a person, an identifier),
        which the embedding model may not know: the relevance gate trusts an exact match on it.
        """
        with self._lock:
            self._ensure_fresh()
            model = self._bm25
        if model is None:
            return dict.fromkeys(terms, 0)
        indptr, vocab = model.scores["indptr"], model.vocab_dict
        return {t: int(indptr[vocab[t] + 1] - indptr[vocab[t]]) if t in vocab else 0 for t in terms}

    def near_term(self, term: str, max_edits: int) -> str | None:
        """A (tokenized) term the index holds within `max_edits` insertions, deletions or
        substitutions of `term`, or None: a question's misspelling of a word the documents hold."""
        from rapidfuzz import process
        from rapidfuzz.distance import Levenshtein

        with self._lock:
            self._ensure_fresh()
            model = self._bm25
        if model is None:
            return None
        found = process.extractOne(term, model.vocab_dict.keys(), scorer=Levenshtein.distance, score_cutoff=max_edits)
        return str(found[0]) if found else None
