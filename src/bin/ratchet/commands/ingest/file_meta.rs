//! The metadata folder ingest stores on every chunk, for filters (`ratchet search --where`)
//! and for showing where a hit comes from.
//!
//! Keys: `path` (the file's path under its folder, `/`-separated: the document id), `file`
//! (its name), `ext` (its extension, lowercase, without the dot), `title` (its first
//! Markdown heading, else the file stem), `headings` (the Markdown headings in effect where
//! the chunk starts, outermost first; `[]` outside any, and for files that are not
//! Markdown; an HTML page's `<h1>`..`<h6>` count, see `html.rs`) and `mtime` (the
//! modification time, whole seconds since the Unix epoch).
//!
//! Headings are `#` to `######` lines (ATX headings), outside fenced code blocks as far as
//! one chunk shows; a chunk's overlap with the one before it repeats headings already
//! seen, which changes nothing.

use serde_json::{json, Value};
use std::path::Path;

/// Whether a file of this extension is read as Markdown (for headings): an HTML page is
/// chunked as the Markdown `html::to_markdown` makes of it.
fn is_markdown(ext: &str) -> bool {
    matches!(ext, "md" | "markdown" | "mdx" | "html" | "htm")
}

/// The level and text of an ATX heading line (`## Install` -> (2, "Install")).
fn heading(line: &str) -> Option<(usize, &str)> {
    let line = line.trim_start();
    let level = line.bytes().take_while(|&b| b == b'#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &line[level..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim();
    (!text.is_empty()).then_some((level, text))
}

/// The open headings, outermost first.
#[derive(Default, Clone)]
struct Outline(Vec<(usize, String)>);

impl Outline {
    fn apply(&mut self, level: usize, text: &str) {
        while self.0.last().is_some_and(|(l, _)| *l >= level) {
            self.0.pop();
        }
        self.0.push((level, text.to_string()));
    }

    fn texts(&self) -> Vec<String> {
        self.0.iter().map(|(_, t)| t.clone()).collect()
    }
}

/// The metadata of each of `chunks`, cut from a file at `relative` (its document id) under
/// its folder, modified `mtime_secs` seconds after the epoch, with text `text`.
pub fn chunk_metas(relative: &str, text: &str, chunks: &[String], mtime_secs: u64) -> Vec<Value> {
    let path = Path::new(relative);
    let file = relative.rsplit('/').next().unwrap_or(relative).to_string();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let markdown = is_markdown(&ext);
    let mut in_fence = false;
    let first_heading = markdown
        .then(|| {
            text.lines().find_map(|line| {
                if line.trim_start().starts_with("```") {
                    in_fence = !in_fence;
                }
                if in_fence {
                    None
                } else {
                    heading(line).map(|(_, t)| t.to_string())
                }
            })
        })
        .flatten();
    let title = first_heading.unwrap_or_else(|| {
        path.file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or(&file)
            .to_string()
    });
    let mut outline = Outline::default();
    chunks
        .iter()
        .map(|chunk| {
            let mut headings = Vec::new();
            if markdown {
                // The headings in effect where the chunk starts: those before it, and the
                // ones it opens with.
                let mut at_start = outline.clone();
                for line in chunk.lines() {
                    if line.trim().is_empty() {
                        continue;
                    }
                    match heading(line) {
                        Some((level, text)) => at_start.apply(level, text),
                        None => break,
                    }
                }
                headings = at_start.texts();
                let mut fenced = false;
                for line in chunk.lines() {
                    if line.trim_start().starts_with("```") {
                        fenced = !fenced;
                    } else if !fenced {
                        if let Some((level, text)) = heading(line) {
                            outline.apply(level, text);
                        }
                    }
                }
            }
            json!({
                "path": relative,
                "file": file,
                "ext": ext,
                "title": title,
                "headings": headings,
                "mtime": mtime_secs,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_follow_the_outline() {
        let text = "# Guide\n\nintro\n\n## Install\n\nrun it\n\n## Use\n\ncall it";
        let chunks = vec![
            "# Guide\n\nintro".to_string(),
            "## Install\n\nrun it".to_string(),
            "run it\n\n## Use\n\ncall it".to_string(),
        ];
        let metas = chunk_metas("docs/guide.md", text, &chunks, 7);
        assert_eq!(metas[0]["headings"], json!(["Guide"]));
        assert_eq!(metas[1]["headings"], json!(["Guide", "Install"]));
        assert_eq!(metas[2]["headings"], json!(["Guide", "Install"]));
        assert_eq!(metas[0]["title"], "Guide");
        assert_eq!(metas[0]["ext"], "md");
        assert_eq!(metas[0]["file"], "guide.md");
        assert_eq!(metas[0]["path"], "docs/guide.md");
        assert_eq!(metas[0]["mtime"], 7);
    }

    #[test]
    fn plain_text_has_the_stem_as_title_and_no_headings() {
        let metas = chunk_metas("notes/todo.TXT", "# not a heading", &["# x".into()], 0);
        assert_eq!(metas[0]["title"], "todo");
        assert_eq!(metas[0]["ext"], "txt");
        assert_eq!(metas[0]["headings"], json!([]));
    }
}
