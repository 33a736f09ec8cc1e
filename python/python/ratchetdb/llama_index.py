"""LlamaIndex integration: ``RatchetVectorStore``, a ``BasePydanticVectorStore`` over one
ratchetdb file (``stores_text = True``), and ``RatchetEmbedding``, a ``BaseEmbedding`` over
a ratchetdb embedder (``RatchetEmbedding(ratchetdb.HashingEmbedder(384))`` or
``RatchetEmbedding(ratchetdb.MiniLM())``), to use as the index's ``embed_model``.

Layout: the nodes of one ``ref_doc_id`` are the chunks of ONE ratchetdb document
``(source, ref_doc_id)`` (a node without a ``ref_doc_id`` is a document of its own, keyed by
its node id). Every write is versioned by a store ticket, so ``delete(ref_doc_id)`` is a
versioned tombstone that no late write of an older revision can undo.

Nodes of one ``ref_doc_id`` arriving over several ``add`` calls (``VectorStoreIndex``
inserts in batches of 2048) are MERGED, never wiped: ``add`` reads the document's stored
revision and writes a new one holding the stored nodes (in their order) with the incoming
ones replacing nodes of the same node id in place and the others appended. Stored nodes
are written without a vector, so the store keeps their vectors (nothing is embedded
again). To replace a document's nodes, delete it first: that is what ``refresh_ref_docs``
and ``update_ref_doc`` do. Merging is serialised by a lock per ``RatchetVectorStore``; two
processes (or two instances) merging into the same ``ref_doc_id`` at once may keep only the
later merge, whole (never a mix).

Filters: ``MetadataFilters`` become ratchetdb metadata filters (evaluated in Rust, on
the chunk's metadata). ``==``, ``!=``, ``>``, ``>=``, ``<``, ``<=``, ``in``, ``nin``,
``contains``, ``text_match`` (substring), ``any``, ``all``, ``is_empty`` (absent, ``None``
or ``""``), nested filters, and the conditions ``and``, ``or``, ``not`` (none of the
filters holds) are supported; ``text_match_insensitive`` raises ``ValueError``. As in
ratchetdb's language, ``!=`` and ``nin`` match only nodes that have the key.

Query modes (``vector_store_query_mode``): ``"default"`` (nearest vectors),
``"text_search"`` (BM25 over the nodes' text, from ``query_str``; nothing is embedded),
``"hybrid"`` (both, from ``query_str`` and ``query_embedding``: reciprocal rank fusion, or
with ``alpha`` a weighted sum of the scaled scores, 0 for words only and 1 for vectors
only) and ``"mmr"`` (LlamaIndex's maximal marginal relevance over the nearest
``mmr_prefetch_factor`` (4) times ``similarity_top_k`` nodes, or ``mmr_prefetch_k``, with
their stored vectors; ``mmr_threshold`` from the query or ``vector_store_kwargs``, 0.5 by
default). Every other mode (``"sparse"``, ``"semantic_hybrid"``, the learners) raises
``ValueError``, as do query fields that the mode would not use (``alpha`` outside
``"hybrid"``, ``mmr_threshold`` outside ``"mmr"``, ``sparse_top_k``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from ratchetdb import Embedder, InputError, Store, matches

try:
    from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.indices.query.embedding_utils import get_top_k_mmr_embeddings
    from llama_index.core.schema import BaseNode
    from llama_index.core.vector_stores.types import (
        BasePydanticVectorStore,
        FilterCondition,
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
        VectorStoreQuery,
        VectorStoreQueryMode,
        VectorStoreQueryResult,
    )
    from llama_index.core.vector_stores.utils import (
        metadata_dict_to_node,
        node_to_metadata_dict,
    )
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "ratchetdb.llama_index needs llama-index-core: pip install 'ratchetdb[llama-index]'"
    ) from error

__all__ = ["RatchetEmbedding", "RatchetVectorStore", "to_where"]

NODE_ID_KEY = "_node_id"


class RatchetEmbedding(BaseEmbedding):
    """A LlamaIndex ``BaseEmbedding`` computed by a ratchetdb embedder in Rust (the GIL
    released); ``model_name`` is the embedder's model. The same text gives the same vector
    as the embedder's ``embed`` and the ``ratchet`` CLI. Pass the embedder to the vector
    store too (``RatchetVectorStore(path, embedder=...)``) to have the store record its
    model and refuse a store of another."""

    _embedder: Embedder = PrivateAttr()

    def __init__(self, embedder: Embedder, embed_batch_size: int = 64, **kwargs: Any) -> None:
        if not isinstance(embedder, Embedder):
            raise TypeError(
                f"embedder is of type {type(embedder).__name__}; give a "
                "ratchetdb.HashingEmbedder or ratchetdb.MiniLM"
            )
        super().__init__(
            model_name=embedder.model, embed_batch_size=embed_batch_size, **kwargs
        )
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        return "RatchetEmbedding"

    @property
    def embedder(self) -> Embedder:
        """The ratchetdb embedder."""
        return self._embedder

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._embedder.embed([query])[0].tolist()

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._embedder.embed([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._embedder.embed(list(texts)).tolist()


def _one(f: MetadataFilter) -> dict:
    op, key, value = f.operator, f.key, f.value
    simple = {
        FilterOperator.EQ: "$eq",
        FilterOperator.NE: "$ne",
        FilterOperator.GT: "$gt",
        FilterOperator.GTE: "$gte",
        FilterOperator.LT: "$lt",
        FilterOperator.LTE: "$lte",
        FilterOperator.IN: "$in",
        FilterOperator.NIN: "$nin",
        FilterOperator.CONTAINS: "$contains",
        FilterOperator.TEXT_MATCH: "$contains",
    }
    if op in simple:
        return {key: {simple[op]: value}}
    if op == FilterOperator.ANY:
        return {"$or": [{key: {"$contains": v}} for v in value or []]}
    if op == FilterOperator.ALL:
        return {"$and": [{key: {"$contains": v}} for v in value or []]}
    if op == FilterOperator.IS_EMPTY:
        return {
            "$or": [
                {key: {"$exists": False}},
                {key: {"$eq": None}},
                {key: {"$eq": ""}},
            ]
        }
    raise ValueError(f"the filter operator {op.value!r} has no ratchetdb equivalent")


def to_where(filters: Optional[MetadataFilters]) -> Optional[dict]:
    """A LlamaIndex ``MetadataFilters`` as a ratchetdb ``where`` filter (``None`` for none)."""
    if filters is None or not filters.filters:
        return None
    parts = [
        to_where(f) if isinstance(f, MetadataFilters) else _one(f)
        for f in filters.filters
    ]
    parts = [p if p is not None else {} for p in parts]
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.AND:
        return {"$and": parts}
    if condition == FilterCondition.OR:
        return {"$or": parts}
    if condition == FilterCondition.NOT:
        return {"$not": {"$or": parts}}
    raise ValueError(f"the filter condition {condition!r} has no ratchetdb equivalent")


def _and(*parts: Optional[dict]) -> Optional[dict]:
    present = [p for p in parts if p]
    if not present:
        return None
    return present[0] if len(present) == 1 else {"$and": present}


class RatchetVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store backed by a ratchetdb file. See the module docstring for how
    nodes map to documents and how several ``add`` calls for one ``ref_doc_id`` combine."""

    stores_text: bool = True
    flat_metadata: bool = False
    source: str = "llama_index"

    _store: Store = PrivateAttr()
    _lock: Any = PrivateAttr()

    def __init__(
        self,
        path: Any = None,
        *,
        source: str = "llama_index",
        store: Optional[Store] = None,
        **store_options: Any,
    ) -> None:
        super().__init__(source=source)
        if store is None:
            if path is None:
                raise ValueError("RatchetVectorStore needs a path (or store=)")
            store = Store(path, **store_options)
        self._store = store
        self._lock = threading.Lock()

    @classmethod
    def class_name(cls) -> str:
        return "RatchetVectorStore"

    @property
    def client(self) -> Store:
        """The ``ratchetdb.Store``."""
        return self._store

    def close(self) -> None:
        """Closes the underlying store."""
        self._store.close()

    # ----- writing -------------------------------------------------------------------

    @staticmethod
    def _doc_id(node: BaseNode) -> str:
        return node.ref_doc_id or node.node_id

    def _meta(self, node: BaseNode) -> dict:
        meta = node_to_metadata_dict(
            node, remove_text=True, flat_metadata=self.flat_metadata
        )
        meta[NODE_ID_KEY] = node.node_id
        return meta

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Adds nodes, merging them into their ``ref_doc_id``'s stored nodes (see the module
        docstring); returns their node ids."""
        if not nodes:
            return []
        groups: dict[str, list[BaseNode]] = {}
        for node in nodes:
            if node.embedding is None:
                raise ValueError(f"node {node.node_id} has no embedding")
            groups.setdefault(self._doc_id(node), []).append(node)
        with self._lock:
            version = self._store.ticket()
            ops = []
            for doc_id, incoming in groups.items():
                # node id -> (text, meta, vector or None to keep the stored one)
                merged: dict[str, tuple[str, dict, Optional[np.ndarray]]] = {}
                stored = self._store.get(self.source, doc_id)
                if stored is not None and not stored["deleted"]:
                    for chunk in stored["chunks"]:
                        meta = chunk["meta"] or {}
                        merged[meta.get(NODE_ID_KEY, "")] = (chunk["text"], meta, None)
                for node in incoming:
                    merged[node.node_id] = (
                        node.get_content(),
                        self._meta(node),
                        np.asarray(node.embedding, dtype=np.float32),
                    )
                ops.append(
                    {
                        "op": "upsert",
                        "source": self.source,
                        "id": doc_id,
                        "version": version,
                        "texts": [t for t, _, _ in merged.values()],
                        "vectors": [v for _, _, v in merged.values()],
                        "metas": [m for _, m, _ in merged.values()],
                    }
                )
            for result in self._store.write_batch(ops):
                if isinstance(result, BaseException):
                    raise result
        return [node.node_id for node in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Deletes every node of ``ref_doc_id`` (a versioned tombstone)."""
        with self._lock:
            self._store.delete(self.source, ref_doc_id, self._store.ticket())

    def _documents(self):
        for doc in self._store.export():
            if doc["source"] == self.source and not doc["deleted"]:
                yield doc

    def delete_nodes(
        self,
        node_ids: Optional[list[str]] = None,
        filters: Optional[MetadataFilters] = None,
        **delete_kwargs: Any,
    ) -> None:
        """Deletes the nodes with these ids that match ``filters`` (either may be ``None``;
        both ``None`` deletes nothing). Each affected document is rewritten once without
        them (the kept nodes keep their vectors), or deleted when none is left."""
        if node_ids is None and filters is None:
            return
        wanted = set(node_ids) if node_ids is not None else None
        where = to_where(filters)
        with self._lock:
            version = self._store.ticket()
            ops = []
            for doc in self._documents():
                kept = []
                for chunk in doc["chunks"]:
                    meta = chunk["meta"] or {}
                    hit = (wanted is None or meta.get(NODE_ID_KEY) in wanted) and (
                        where is None or matches(where, meta, doc["meta"])
                    )
                    if not hit:
                        kept.append(chunk)
                if len(kept) == len(doc["chunks"]):
                    continue
                if not kept:
                    ops.append(
                        {
                            "op": "delete",
                            "source": self.source,
                            "id": doc["id"],
                            "version": version,
                        }
                    )
                else:
                    ops.append(
                        {
                            "op": "upsert",
                            "source": self.source,
                            "id": doc["id"],
                            "version": version,
                            "texts": [c["text"] for c in kept],
                            "vectors": [None] * len(kept),
                            "metas": [c["meta"] for c in kept],
                            "meta": doc["meta"],
                        }
                    )
            if ops:
                for result in self._store.write_batch(ops):
                    if isinstance(result, BaseException):
                        raise result

    def clear(self) -> None:
        """Deletes every node of this store's source (a ``retain`` of nothing)."""
        with self._lock:
            self._store.retain(self.source, [], self._store.ticket())

    # ----- reading -------------------------------------------------------------------

    def get_nodes(
        self,
        node_ids: Optional[list[str]] = None,
        filters: Optional[MetadataFilters] = None,
    ) -> list[BaseNode]:
        """The stored nodes with these ids (all when ``None``) that match ``filters``."""
        wanted = set(node_ids) if node_ids is not None else None
        where = to_where(filters)
        nodes = []
        for doc in self._documents():
            for chunk in doc["chunks"]:
                meta = chunk["meta"] or {}
                if wanted is not None and meta.get(NODE_ID_KEY) not in wanted:
                    continue
                if where is not None and not matches(where, meta, doc["meta"]):
                    continue
                nodes.append(metadata_dict_to_node(meta, text=chunk["text"]))
        return nodes

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The best ``similarity_top_k`` nodes (``hybrid_top_k`` in hybrid mode, when
        given) that match ``query.filters``, ``query.doc_ids`` (ref doc ids) and
        ``query.node_ids``, by ``query.mode``: ``DEFAULT`` (nearest to
        ``query_embedding``), ``TEXT_SEARCH`` (BM25 of ``query_str``), ``HYBRID`` (both,
        fused; ``alpha`` weights the vectors) or ``MMR`` (diverse nearest nodes, in the
        order picked; a candidate whose document was rewritten between the search and the
        read of its stored vector is left out). Any other mode raises ``ValueError``. A
        similarity is the store's score (cosine similarity, BM25 score or fused score).
        ``exact``, ``ef`` and ``rerank`` (keyword arguments) are passed to the vector search."""
        mode = VectorStoreQueryMode(query.mode)
        if mode not in _MODES:
            raise ValueError(_mode_refusal(mode))
        if query.alpha is not None and mode != VectorStoreQueryMode.HYBRID:
            raise ValueError(
                f"alpha is {query.alpha!r} but vector_store_query_mode is "
                f"{mode.value!r}: alpha weighs vectors against words in 'hybrid' mode only"
            )
        if query.mmr_threshold is not None and mode != VectorStoreQueryMode.MMR:
            raise ValueError(
                f"mmr_threshold is {query.mmr_threshold!r} but vector_store_query_mode is "
                f"{mode.value!r}: it applies to 'mmr' mode only"
            )
        if query.sparse_top_k is not None:
            raise ValueError(
                f"sparse_top_k is {query.sparse_top_k!r}: RatchetVectorStore's text and "
                "hybrid searches take one count, similarity_top_k (hybrid_top_k in "
                "'hybrid' mode)"
            )
        where = _and(
            to_where(query.filters),
            {"ref_doc_id": {"$in": list(query.doc_ids)}} if query.doc_ids else None,
            {NODE_ID_KEY: {"$in": list(query.node_ids)}} if query.node_ids else None,
        )
        sources = [self.source]
        if mode == VectorStoreQueryMode.DEFAULT:
            vector = _embedding(query, mode)

            def search() -> list:
                return self._store.search(
                    vector,
                    query.similarity_top_k,
                    where=where,
                    sources=sources,
                    exact=kwargs.get("exact", False),
                    ef=kwargs.get("ef"),
                    rerank=kwargs.get("rerank"),
                )

        elif mode == VectorStoreQueryMode.TEXT_SEARCH:
            text = _query_str(query, mode)

            def search() -> list:
                return self._store.search_text(
                    text, query.similarity_top_k, where=where, sources=sources
                )

        elif mode == VectorStoreQueryMode.MMR:
            vector = _embedding(query, mode)
            threshold = (
                query.mmr_threshold
                if query.mmr_threshold is not None
                else kwargs.get("mmr_threshold")
            )
            if threshold is not None and not 0.0 <= threshold <= 1.0:
                raise ValueError(
                    f"mmr_threshold is {threshold!r}; it must be between 0 (most "
                    "diverse) and 1 (similarity only)"
                )
            fetch_k = _prefetch(query.similarity_top_k, kwargs)

            def search() -> list:
                hits = self._store.search(
                    vector,
                    fetch_k,
                    where=where,
                    sources=sources,
                    exact=kwargs.get("exact", False),
                    ef=kwargs.get("ef"),
                    rerank=kwargs.get("rerank"),
                )
                candidates = [
                    (hit, stored)
                    for hit, stored in zip(hits, self._hit_vectors(hits))
                    if stored is not None
                ]
                _, picked = get_top_k_mmr_embeddings(
                    vector.tolist(),
                    [stored.tolist() for _, stored in candidates],
                    similarity_top_k=query.similarity_top_k,
                    embedding_ids=list(range(len(candidates))),
                    mmr_threshold=threshold,
                )
                return [candidates[i][0] for i in picked]

        else:
            text = _query_str(query, mode)
            vector = _embedding(query, mode)
            alpha = query.alpha
            if alpha is not None and not 0.0 <= alpha <= 1.0:
                raise ValueError(
                    f"alpha is {alpha!r}; it must be between 0 (words only) and 1 "
                    "(vectors only)"
                )
            k = (
                query.hybrid_top_k
                if query.hybrid_top_k is not None
                else query.similarity_top_k
            )

            def search() -> list:
                return self._store.search_hybrid(
                    text,
                    vector,
                    k,
                    where=where,
                    sources=sources,
                    ef=kwargs.get("ef"),
                    rerank=kwargs.get("rerank"),
                    vector_weight=alpha,
                )

        try:
            hits = search()
        except InputError as error:
            # The store holds no document of this source yet: nothing matches.
            if error.field.startswith("sources"):
                return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
            raise
        nodes, similarities, ids = [], [], []
        for hit in hits:
            node = metadata_dict_to_node(hit.meta or {}, text=hit.text)
            nodes.append(node)
            similarities.append(float(hit.score))
            ids.append(node.node_id)
        return VectorStoreQueryResult(nodes=nodes, similarities=similarities, ids=ids)


    def _hit_vectors(self, hits: list) -> list[Optional[np.ndarray]]:
        """The stored vector of each hit's chunk, read from its document (``None`` when the
        document changed since the search: another revision, or deleted)."""
        docs: dict[tuple[str, str], Optional[dict]] = {}
        vectors: list[Optional[np.ndarray]] = []
        for hit in hits:
            key = (hit.source, hit.id)
            if key not in docs:
                docs[key] = self._store.get(hit.source, hit.id, vectors=True)
            doc = docs[key]
            vector = None
            if (
                doc is not None
                and not doc["deleted"]
                and doc["generation"] == hit.generation
            ):
                for chunk in doc["chunks"]:
                    if chunk["position"] == hit.position:
                        vector = chunk.get("vector")
                        break
            vectors.append(vector)
        return vectors


_MODES = (
    VectorStoreQueryMode.DEFAULT,
    VectorStoreQueryMode.TEXT_SEARCH,
    VectorStoreQueryMode.HYBRID,
    VectorStoreQueryMode.MMR,
)


def _prefetch(top_k: int, kwargs: dict) -> int:
    """How many nearest nodes MMR chooses among: ``mmr_prefetch_k``, or
    ``mmr_prefetch_factor`` (default 4) times ``top_k``; never fewer than ``top_k``."""
    fetch_k = kwargs.get("mmr_prefetch_k")
    if fetch_k is None:
        factor = kwargs.get("mmr_prefetch_factor", 4.0)
        if not factor >= 1.0:
            raise ValueError(f"mmr_prefetch_factor is {factor!r}; it must be at least 1")
        return max(top_k, math.ceil(top_k * factor))
    if fetch_k < top_k:
        raise ValueError(
            f"mmr_prefetch_k is {fetch_k!r}; it must be at least similarity_top_k ({top_k})"
        )
    return fetch_k


def _mode_refusal(mode: VectorStoreQueryMode) -> str:
    supported = ", ".join(repr(m.value) for m in _MODES)
    if mode == VectorStoreQueryMode.SPARSE:
        why = (
            "it keeps no learned sparse vectors; for keyword (BM25) retrieval use "
            "'text_search', or 'hybrid' for words and vectors together"
        )
    else:
        why = "it has no such search"
    return (
        f"vector_store_query_mode {mode.value!r} is not supported by "
        f"RatchetVectorStore: {why} (supported: {supported})"
    )


def _query_str(query: VectorStoreQuery, mode: VectorStoreQueryMode) -> str:
    if not query.query_str:
        raise ValueError(
            f"vector_store_query_mode {mode.value!r} needs query.query_str (the words to "
            "search for)"
        )
    return query.query_str


def _embedding(query: VectorStoreQuery, mode: VectorStoreQueryMode) -> np.ndarray:
    if query.query_embedding is None:
        raise ValueError(
            f"vector_store_query_mode {mode.value!r} needs query.query_embedding"
        )
    return np.asarray(query.query_embedding, dtype=np.float32)
