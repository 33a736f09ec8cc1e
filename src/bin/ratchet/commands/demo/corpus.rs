//! The bundled corpus (`demo/corpus/`, compiled in): each file is one document and its
//! history, revisions separated by `<!-- revision N -->` lines (see `demo/corpus/README.md`).

use ratchetdb::{chunk_text, ChunkerOptions, Version};

/// Every document file of `demo/corpus/`, compiled into the binary. `tests/cli/cli_demo.rs`
/// checks that this list and the folder agree.
macro_rules! corpus_files {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/demo/corpus/", $name)))),*]
    };
}

const FILES: &[(&str, &str)] = corpus_files![
    "accessibility.md",
    "app-pairing.md",
    "beta-program.md",
    "child-lock.md",
    "cleaning.md",
    "descaling.md",
    "developer-api.md",
    "error-codes.md",
    "faq.md",
    "filter-replacement.md",
    "firmware-updates.md",
    "holiday-promo.md",
    "keep-warm.md",
    "legacy-cloud-api.md",
    "pod-subscription.md",
    "power-and-voltage.md",
    "privacy.md",
    "recycling.md",
    "returns.md",
    "safety.md",
    "shipping.md",
    "spare-parts.md",
    "support-hours.md",
    "temperature-presets.md",
    "travel-kettle.md",
    "voice-assistants.md",
    "warranty.md",
];

/// The source name of every demo document.
pub const SOURCE: &str = "kettlebird-handbook";

/// Chunk sizes for the demo: small, so that documents have a few chunks and a shorter
/// revision visibly drops some.
pub const CHUNKER: ChunkerOptions = ChunkerOptions {
    max_chars: 260,
    overlap_chars: 40,
};

/// 2024-01-01T00:00:00Z, in microseconds: the time of the first revision.
const EPOCH_MICROS: u64 = 1_704_067_200_000_000;
const HOUR_MICROS: u64 = 3_600_000_000;
const WEEK_MICROS: u64 = 7 * 24 * HOUR_MICROS;

/// How a document's history ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// It still exists.
    Live,
    /// The source deleted it, and sent a delete event (at this revision number).
    Deleted(usize),
    /// It disappeared without an event (at this revision number); only a listing notices.
    Vanished(usize),
}

/// One document and its revisions (index 0 is revision 1), each already chunked.
pub struct CorpusDocument {
    pub id: &'static str,
    pub revisions: Vec<Vec<String>>,
    pub end: End,
}

impl CorpusDocument {
    /// The chunks of the last revision, if the document still exists at the source.
    pub fn final_chunks(&self) -> Option<&[String]> {
        match self.end {
            End::Live => self.revisions.last().map(Vec::as_slice),
            End::Deleted(_) | End::Vanished(_) => None,
        }
    }
}

/// The source modification time of `revision` (1-based) of document number `doc`: one week
/// per revision, documents an hour apart.
pub fn revision_version(doc: usize, revision: usize) -> Version {
    Version::timestamp_micros(
        EPOCH_MICROS + revision as u64 * WEEK_MICROS + doc as u64 * HOUR_MICROS,
    )
}

/// The time of the sync listing: after every revision and delete.
pub fn listing_version() -> Version {
    Version::timestamp_micros(EPOCH_MICROS + 20 * WEEK_MICROS)
}

/// The corpus, parsed and chunked.
pub fn load() -> Result<Vec<CorpusDocument>, String> {
    FILES
        .iter()
        .map(|(name, text)| parse(name, text).map_err(|e| format!("demo/corpus/{name}: {e}")))
        .collect()
}

fn parse(id: &'static str, text: &str) -> Result<CorpusDocument, String> {
    let mut revisions: Vec<Vec<String>> = Vec::new();
    let mut current: Option<String> = None;
    let mut end = End::Live;
    let finish = |current: &mut Option<String>, revisions: &mut Vec<Vec<String>>| {
        if let Some(body) = current.take() {
            revisions.push(chunk_text(body.trim(), &CHUNKER));
        }
    };
    for line in text.lines() {
        let marker = line
            .trim()
            .strip_prefix("<!-- revision ")
            .and_then(|rest| rest.strip_suffix("-->"));
        let Some(marker) = marker else {
            match &mut current {
                Some(body) => {
                    body.push_str(line);
                    body.push('\n');
                }
                None if line.trim().is_empty() => {}
                None => {
                    return Err(
                        "text outside a revision (before the first marker, or after a deletion)"
                            .into(),
                    )
                }
            }
            continue;
        };
        if end != End::Live {
            return Err("a revision after the document's end".into());
        }
        finish(&mut current, &mut revisions);
        let (number, kind) = match marker.trim().split_once(':') {
            Some((number, kind)) => (number.trim(), Some(kind.trim())),
            None => (marker.trim(), None),
        };
        let number: usize = number
            .parse()
            .map_err(|_| format!("bad revision number {number:?}"))?;
        if number != revisions.len() + 1 {
            return Err(format!(
                "revision {number} follows revision {}",
                revisions.len()
            ));
        }
        match kind {
            None => current = Some(String::new()),
            Some("deleted") => end = End::Deleted(number),
            Some("vanished") => end = End::Vanished(number),
            Some(other) => return Err(format!("unknown revision kind {other:?}")),
        }
    }
    finish(&mut current, &mut revisions);
    if revisions.is_empty() || revisions.iter().any(Vec::is_empty) {
        return Err("every revision needs text".into());
    }
    Ok(CorpusDocument { id, revisions, end })
}
