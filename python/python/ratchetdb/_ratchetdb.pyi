"""Type stubs of the ratchetdb extension module (`ratchetdb._ratchetdb`)."""

import datetime
import os
from typing import Any, Iterable, Iterator, Literal, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

# A version: a source revision number, a timezone-aware modification time, or a store ticket.
VersionLike = Union[int, datetime.datetime, "Ticket"]
# One vector: a 1-D array of real numbers (float32 is read in place) or a sequence of them.
VectorLike = Union[npt.NDArray[np.floating[Any]], npt.NDArray[np.integer[Any]], Sequence[float]]
# Rows of vectors: a 2-D array, or a sequence of rows (`None`: reuse the stored vector of
# identical text in the document).
VectorsLike = Union[
    npt.NDArray[np.floating[Any]], npt.NDArray[np.integer[Any]], Sequence[Optional[VectorLike]]
]
# JSON-like metadata.
Json = Any
# A metadata filter (`{"lang": "en", "year": {"$gte": 2020}}`).
Where = Mapping[str, Any]

class Ticket:
    """A store-issued version (`Store.ticket()`)."""

    value: int
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...
    def __eq__(self, other: object) -> bool: ...
    def __lt__(self, other: "Ticket") -> bool: ...
    def __le__(self, other: "Ticket") -> bool: ...
    def __gt__(self, other: "Ticket") -> bool: ...
    def __ge__(self, other: "Ticket") -> bool: ...
    def __hash__(self) -> int: ...

class Outcome:
    """What one upsert or delete did."""

    status: Literal["written", "unchanged", "deleted", "skipped"]
    reason: Optional[Literal["older", "duplicate", "conflict", "tombstoned"]]
    stored_version: Optional[VersionLike]
    incoming_version: Optional[VersionLike]
    generation: Optional[int]
    chunks_written: int
    chunks_reused: int
    chunks_removed: int
    @property
    def applied(self) -> bool: ...

class RetainOutcome:
    """What a `retain` listing did."""

    status: Literal["retained", "skipped"]
    reason: Optional[Literal["duplicate", "conflict"]]
    documents_removed: int
    chunks_removed: int
    newer_kept: int

class Hit:
    """One search result: a live chunk."""

    source: str
    id: str
    position: int
    text: str
    score: float
    generation: int
    @property
    def meta(self) -> Json: ...
    @property
    def version(self) -> VersionLike: ...

class VerifyReport:
    """What `verify()` checked and found."""

    ok: bool
    documents: int
    tombstones: int
    chunks: int
    vectors: int
    violations: list[dict[str, str]]
    def __bool__(self) -> bool: ...

class Export:
    """The documents of one snapshot, as dicts (see `Store.get`)."""

    def __iter__(self) -> Iterator[dict[str, Any]]: ...
    def __next__(self) -> dict[str, Any]: ...
    def __len__(self) -> int: ...

class Embedder:
    """An embedder of the ratchetdb crate (`HashingEmbedder` or `MiniLM`)."""

    @property
    def dimension(self) -> int: ...
    @property
    def model(self) -> str: ...
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One L2-normalised row per text, shape `(len(texts), dimension)`; the GIL is
        released."""
        ...

class HashingEmbedder(Embedder):
    """The built-in lexical embedder (model `"hash-lexical-v1-<dimension>"`)."""

    def __init__(self, dimension: int = 384) -> None: ...

class MiniLM(Embedder):
    """all-MiniLM-L6-v2 in Rust (model `"all-MiniLM-L6-v2"`, 384 dimensions); raises
    `ModelNotFoundError` when no model is installed."""

    def __init__(self, model_dir: Union[str, os.PathLike[str], None] = None) -> None: ...
    @property
    def model_dir(self) -> str: ...

class Store:
    """An open ratchetdb store (one file); a context manager."""

    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        *,
        dimension: Optional[int] = None,
        metric: Optional[Literal["cosine", "dot", "l2"]] = None,
        durability: Literal["immediate", "none"] = "immediate",
        read_only: bool = False,
        embedder: Optional[Embedder] = None,
        memory_budget: Optional[int] = None,
    ) -> None: ...
    def __enter__(self) -> "Store": ...
    def __exit__(self, *args: object) -> bool: ...
    def __len__(self) -> int: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> str: ...
    @property
    def dimension(self) -> Optional[int]: ...
    @property
    def metric(self) -> Literal["cosine", "dot", "l2"]: ...
    @property
    def model(self) -> Optional[str]: ...
    @property
    def embedder(self) -> Optional[Embedder]: ...
    def upsert(
        self,
        source: str,
        id: str,
        version: VersionLike,
        texts: Sequence[str],
        vectors: Optional[VectorsLike] = None,
        *,
        metas: Optional[Sequence[Json]] = None,
        meta: Json = None,
        space_vectors: Optional[Mapping[str, VectorsLike]] = None,
    ) -> Outcome: ...
    def add(
        self,
        sources: Union[str, Sequence[str]],
        ids: Sequence[str],
        versions: Union[VersionLike, Sequence[VersionLike]],
        texts: Sequence[str],
        vectors: Optional[VectorsLike] = None,
        metas: Optional[Sequence[Json]] = None,
        *,
        space_vectors: Optional[Mapping[str, VectorsLike]] = None,
    ) -> list[Union[Outcome, "InputError"]]: ...
    def delete(self, source: str, id: str, version: VersionLike) -> Outcome: ...
    def retain(self, source: str, ids: Sequence[str], version: VersionLike) -> RetainOutcome: ...
    def write_batch(
        self, ops: Sequence[Mapping[str, Any]]
    ) -> list[Union[Outcome, RetainOutcome, "RatchetError"]]: ...
    def ticket(self) -> Ticket: ...
    def search(
        self,
        vector: VectorLike,
        k: int = 10,
        *,
        where: Optional[Where] = None,
        sources: Union[str, Sequence[str], None] = None,
        exact: bool = False,
        ef: Optional[int] = None,
        rerank: Optional[int] = None,
        group_by_document: bool = False,
        space: Optional[str] = None,
    ) -> list[Hit]: ...
    def search_query(
        self,
        query: str,
        k: int = 10,
        *,
        where: Optional[Where] = None,
        sources: Union[str, Sequence[str], None] = None,
        exact: bool = False,
        ef: Optional[int] = None,
        rerank: Optional[int] = None,
        group_by_document: bool = False,
        space: Optional[str] = None,
    ) -> list[Hit]: ...
    def search_text(
        self,
        query: str,
        k: int = 10,
        *,
        where: Optional[Where] = None,
        sources: Union[str, Sequence[str], None] = None,
        k1: Optional[float] = None,
        b: Optional[float] = None,
        group_by_document: bool = False,
    ) -> list[Hit]: ...
    def search_hybrid(
        self,
        text: str,
        vector: Optional[VectorLike] = None,
        k: int = 10,
        *,
        where: Optional[Where] = None,
        sources: Union[str, Sequence[str], None] = None,
        ef: Optional[int] = None,
        rerank: Optional[int] = None,
        rrf_k: Optional[int] = None,
        vector_weight: Optional[float] = None,
        group_by_document: bool = False,
        space: Optional[str] = None,
    ) -> list[Hit]: ...
    def search_many(
        self,
        matrix: Union[VectorsLike, Iterable[VectorLike]],
        k: int = 10,
        *,
        where: Optional[Where] = None,
        sources: Union[str, Sequence[str], None] = None,
        exact: bool = False,
        ef: Optional[int] = None,
        rerank: Optional[int] = None,
        group_by_document: bool = False,
        space: Optional[str] = None,
    ) -> list[list[Hit]]: ...
    def _search_timed(self, vector: VectorLike, k: int = 10) -> tuple[list[Hit], int]: ...
    def get(self, source: str, id: str, *, vectors: bool = False) -> Optional[dict[str, Any]]: ...
    def stats(self) -> dict[str, Any]: ...
    def spaces(self) -> list[dict[str, Any]]: ...
    def verify(self) -> VerifyReport: ...
    def export(self, *, vectors: bool = False) -> Export: ...
    def plan(
        self,
        source: str,
        id: str,
        version: VersionLike,
        texts: Sequence[str],
        *,
        metas: Optional[Sequence[Json]] = None,
        meta: Json = None,
    ) -> dict[str, Any]: ...
    def wait_for_index(self, timeout: float = 60.0) -> bool: ...

def matches(where: Where, meta: Json, doc_meta: Json = None) -> bool: ...

class RatchetError(Exception): ...

class InputError(RatchetError):
    field: str
    problem: str

class DimensionMismatchError(InputError): ...
class VersionKindMismatchError(InputError): ...
class MissingVectorError(InputError): ...
class StoreOpenError(RatchetError): ...
class StoreLockedError(StoreOpenError): ...
class StoreNotFoundError(StoreOpenError): ...

class MismatchError(StoreOpenError):
    field: str
    problem: str

class CorruptedError(RatchetError): ...
class StorageError(RatchetError): ...
class PoisonedError(RatchetError): ...
class ReadOnlyError(RatchetError): ...
class ForkedError(RatchetError): ...
class ClosedError(RatchetError): ...
class EmbedError(RatchetError): ...
class ModelNotFoundError(EmbedError): ...
