"""docqa's error tree. Every message says what the user can do about it.

DocqaError
├── ConfigError            a setting has a bad value
├── ConversionError        a file could not be turned into text (the file is skipped)
├── EmbeddingError         the embedding model could not be loaded or run
├── StoreError             the vector store or keyword index could not be used
├── LockError              another docqa process holds the data folder
└── LLMError               no answer could be generated
    ├── BackendUnavailable the backend cannot be reached or is missing its model
    └── GenerationError    the backend failed while answering
"""


class DocqaError(Exception):
    """Base of every error docqa raises on purpose."""


class ConfigError(DocqaError):
    pass


class ConversionError(DocqaError):
    pass


class EmbeddingError(DocqaError):
    pass


class StoreError(DocqaError):
    pass


class LockError(DocqaError):
    pass


class LLMError(DocqaError):
    pass


class BackendUnavailable(LLMError):
    pass


class GenerationError(LLMError):
    pass


def describe_error(exc: Exception) -> str:
    """An error as one line for the user: ours as written, anything else named as unexpected."""
    return str(exc) if isinstance(exc, DocqaError) else f"Unexpected error: {type(exc).__name__}: {exc}"
