#!/usr/bin/env python3
"""The seed's Postgres recipe from Python, beside `benches/postgres_writes.rs`, same server.

Run by hand (never in CI), against the server `scripts/postgres.sh start` runs:

  python3 -m venv /tmp/pg-peer-venv && /tmp/pg-peer-venv/bin/pip install "psycopg[binary]"
  RATCHETDB_PG_URL=postgres://... /tmp/pg-peer-venv/bin/python \
      benches/peers/postgres_seed_recipe.py [--rounds 10] [--writers 1,4,16]

The workload is the Rust bench's: documents of 8 chunks with 384-d vectors, every write a
newer revision of the document replacing its 8 chunks, 64 documents per timed round split
over 1, 4 or 16 writer threads, each on its own connection and its own documents, into
tables whose pgvector HNSW index (cosine, m 16, ef_construction 100: ratchetdb's defaults)
is present. The recipe, one transaction per document:

  INSERT INTO documents ... ON CONFLICT (source, id) DO UPDATE SET version = EXCLUDED.version,
      generation = documents.generation + 1 WHERE EXCLUDED.version > documents.version
      RETURNING generation;
  (if a row came back) INSERT INTO chunks ... ON CONFLICT (source, id, position) DO UPDATE ...;
  DELETE FROM chunks WHERE source = $1 AND id = $2 AND generation < $new;

Prints the median seconds per round and guarded documents/s per writer count (and writes
them as JSON with --out). It guards nothing else (no skip log, counters, metadata, tickets
or text hashes): it is the floor the issue measured the seed at.
"""

import argparse
import json
import os
import random
import statistics
import threading
import time

import psycopg

SCHEMA = "bench_seed_recipe"
DIMENSION = 384
CHUNKS = 8
ROUND = 64

TABLES = f"""
DROP SCHEMA IF EXISTS {SCHEMA} CASCADE;
CREATE SCHEMA {SCHEMA};
CREATE TABLE {SCHEMA}.documents (
    source text NOT NULL, id text NOT NULL, version bigint NOT NULL,
    generation bigint NOT NULL, PRIMARY KEY (source, id));
CREATE TABLE {SCHEMA}.chunks (
    source text NOT NULL, id text NOT NULL, position integer NOT NULL,
    generation bigint NOT NULL, text text NOT NULL, embedding vector({DIMENSION}) NOT NULL,
    PRIMARY KEY (source, id, position));
CREATE INDEX ON {SCHEMA}.chunks USING hnsw (embedding vector_cosine_ops)
    WITH (m = 16, ef_construction = 100);
"""


def vector_text(rng):
    return "[" + ",".join(f"{(rng.randrange(2000) - 1000) / 1000:.3f}" for _ in range(DIMENSION)) + "]"


def write_document(conn, writer, doc, version, rng):
    source, doc_id = f"w{writer}", f"doc{doc}"
    chunks = [
        (
            source,
            doc_id,
            position,
            f"writer {writer} document {doc} revision {version} chunk {position}: "
            + "text " * 20,
            vector_text(rng),
        )
        for position in range(CHUNKS)
    ]
    with conn.transaction():
        row = conn.execute(
            f"""INSERT INTO {SCHEMA}.documents (source, id, version, generation)
                VALUES (%s, %s, %s, 1)
                ON CONFLICT (source, id) DO UPDATE
                    SET version = EXCLUDED.version, generation = documents.generation + 1
                    WHERE EXCLUDED.version > documents.version
                RETURNING generation""",
            (source, doc_id, version),
        ).fetchone()
        if row is None:
            return False
        generation = row[0]
        with conn.cursor() as cur:
            cur.executemany(
                f"""INSERT INTO {SCHEMA}.chunks (source, id, position, generation, text, embedding)
                    VALUES (%s, %s, %s, %s, %s, %s::vector)
                    ON CONFLICT (source, id, position) DO UPDATE
                        SET generation = EXCLUDED.generation, text = EXCLUDED.text,
                            embedding = EXCLUDED.embedding""",
                [(s, i, p, generation, t, v) for (s, i, p, t, v) in chunks],
            )
        conn.execute(
            f"DELETE FROM {SCHEMA}.chunks WHERE source = %s AND id = %s AND generation < %s",
            (source, doc_id, generation),
        )
    return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--writers", default="1,4,16")
    parser.add_argument("--out")
    args = parser.parse_args()
    url = os.environ["RATCHETDB_PG_URL"]
    with psycopg.connect(url, autocommit=True) as setup:
        setup.execute("CREATE EXTENSION IF NOT EXISTS vector")
        setup.execute(TABLES)
    counts = [int(w) for w in args.writers.split(",")]
    conns = [psycopg.connect(url, autocommit=True) for _ in range(max(counts))]
    version = 1
    results = {}
    for writers in counts:
        times = []
        # One warm-up round, then the timed ones.
        for round_index in range(args.rounds + 1):
            version += 1
            written = [0] * writers

            def run(w, v=version):
                rng = random.Random(v * 100 + w)
                for doc in range(ROUND // writers):
                    written[w] += write_document(conns[w], w, doc, v, rng)

            threads = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
            start = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - start
            assert sum(written) == ROUND // writers * writers, written
            if round_index > 0:
                times.append(elapsed)
        median = statistics.median(times)
        results[writers] = {"median_s_per_round": median, "docs_per_s": ROUND / median}
        print(f"writers {writers:>2}: median {median:.3f} s per {ROUND} docs, "
              f"{ROUND / median:.1f} guarded docs/s")
    for conn in conns:
        conn.close()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
