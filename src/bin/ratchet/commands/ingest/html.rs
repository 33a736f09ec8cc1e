//! HTML pages (`.html`, `.htm`) for folder ingest: the text of the markup, read by the
//! HTML5 tokenizer of `html5ever` (entities decoded, `<script>` and `<style>` read as raw
//! text the way browsers do), as the Markdown the chunker and the metadata already
//! understand.
//!
//! Headings `<h1>`..`<h6>` become `#`..`######` lines, so a page's headings feed the chunks'
//! `title` and `headings` as a Markdown file's do; block elements (paragraphs, list items,
//! table rows, `<br>`, ...) end paragraphs (and a heading left open); runs of whitespace
//! become one space, except in `<pre>`, whose lines are kept. What a reader never sees is
//! dropped: `<script>`, `<style>`, `<title>`, `<textarea>`, `<template>`, `<noscript>`,
//! `<iframe>` contents, comments.
//!
//! Only the tokenizer runs, never the tree builder: its work is linear in the page's length
//! whatever the markup's nesting (the tree builder's grows with the depth of open elements,
//! so a hostile page of 10^5 nested tags would take minutes). The tokenizer's work on one
//! tag grows with the square of its attributes, so a page with a tag (from `<` to the next
//! `>`) longer than [`MAX_TAG_BYTES`] is refused before it is tokenized.
//!
//! A text line that begins with `#` (or a code fence, `` ``` ``) would read as a Markdown
//! heading (or fence) and change the chunks' `title` and `headings`: it gets a leading
//! backslash, the Markdown escape.

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use std::cell::RefCell;

/// Elements whose content the tokenizer reads as raw text, none of it shown.
fn raw_kind(name: &str) -> Option<RawKind> {
    match name {
        "script" => Some(RawKind::ScriptData),
        "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => Some(RawKind::Rawtext),
        "title" | "textarea" => Some(RawKind::Rcdata),
        _ => None,
    }
}

/// Elements whose content is hidden though it is markup.
const HIDDEN: &[&str] = &["template"];

/// Elements that begin and end a paragraph.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "br",
    "caption",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "header",
    "hr",
    "html",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
];

/// The level of a heading element (`h2` -> 2).
fn heading_level(name: &str) -> Option<usize> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

/// The longest tag (from `<` to the next `>`) a page may have: no page needs more, and the
/// tokenizer's work on one tag grows with the square of its attributes.
pub const MAX_TAG_BYTES: usize = 64 * 1024;

/// Why a page was not read.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// A tag (from `<` to the next `>`, or the page's end) longer than [`MAX_TAG_BYTES`],
    /// at this byte offset.
    TagTooLong { offset: usize },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::TagTooLong { offset } => write!(
                f,
                "its tag at byte {offset} is longer than {} KiB",
                MAX_TAG_BYTES / 1024
            ),
        }
    }
}

/// The offset of the first tag (from `<` to the next `>`, or the end) longer than
/// [`MAX_TAG_BYTES`], in one pass over the page.
fn too_long_tag(page: &[u8]) -> Option<usize> {
    let mut at = 0;
    while let Some(open) = memchr::memchr(b'<', &page[at..]).map(|i| at + i) {
        let close = memchr::memchr(b'>', &page[open..]).map_or(page.len(), |i| open + i);
        if close - open > MAX_TAG_BYTES {
            return Some(open);
        }
        at = close + 1;
        if at >= page.len() {
            break;
        }
    }
    None
}

/// The page's text as Markdown: paragraphs separated by blank lines, headings as `#` lines;
/// a page with a tag longer than [`MAX_TAG_BYTES`] is refused.
pub fn to_markdown(page: &str) -> Result<String, Refused> {
    if let Some(offset) = too_long_tag(page.as_bytes()) {
        return Err(Refused::TagTooLong { offset });
    }
    let input = BufferQueue::default();
    input.push_back(StrTendril::from(page));
    let tokenizer = Tokenizer::new(Sink::default(), TokenizerOpts::default());
    // The sink never suspends the tokenizer (it runs no scripts): one feed reads it all.
    let _ = tokenizer.feed(&input);
    tokenizer.end();
    let mut out = tokenizer.sink.out.replace(Markdown::default());
    out.end_paragraph();
    Ok(out.paragraphs.join("\n\n"))
}

/// Receives the tokens.
#[derive(Default)]
struct Sink {
    out: RefCell<Markdown>,
}

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut out = self.out.borrow_mut();
        match token {
            Token::TagToken(tag) => return out.tag(&tag),
            Token::CharacterTokens(text) => out.text(&text),
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

/// The Markdown being written.
#[derive(Default)]
struct Markdown {
    paragraphs: Vec<String>,
    /// The paragraph being written.
    current: String,
    /// The heading being written, with its level (headings do not nest).
    heading: Option<(usize, String)>,
    /// Inside a raw-text element whose text is not shown (until its end tag).
    raw: bool,
    /// Depth inside hidden elements, and inside `<pre>`.
    hidden: usize,
    pre: usize,
}

impl Markdown {
    fn tag(&mut self, tag: &Tag) -> TokenSinkResult<()> {
        let name: &str = &tag.name;
        let start = tag.kind == TagKind::StartTag;
        if let Some(kind) = raw_kind(name) {
            // The tokenizer reads up to the matching end tag as text (`<script/>` too: the
            // slash does not close a script, as browsers read it).
            self.raw = start;
            return if self.raw {
                TokenSinkResult::RawData(kind)
            } else {
                TokenSinkResult::Continue
            };
        }
        if HIDDEN.contains(&name) {
            if start {
                self.hidden += 1;
            } else {
                self.hidden = self.hidden.saturating_sub(1);
            }
        } else if let Some(level) = heading_level(name) {
            self.close_heading();
            if start {
                self.end_paragraph();
                self.heading = Some((level, String::new()));
            }
        } else if BLOCKS.contains(&name) {
            self.close_heading();
            self.end_paragraph();
            if name == "pre" && !tag.self_closing {
                if start {
                    self.pre += 1;
                } else {
                    self.pre = self.pre.saturating_sub(1);
                }
            }
        }
        TokenSinkResult::Continue
    }

    fn text(&mut self, text: &str) {
        if self.raw || self.hidden > 0 {
            return;
        }
        let keep_lines = self.pre > 0 && self.heading.is_none();
        let target = match &mut self.heading {
            Some((_, heading)) => heading,
            None => &mut self.current,
        };
        if keep_lines {
            target.push_str(text);
            return;
        }
        for (index, word) in text.split_whitespace().enumerate() {
            let space_before = index > 0 || text.starts_with(char::is_whitespace);
            if space_before && !target.is_empty() && !target.ends_with([' ', '\n']) {
                target.push(' ');
            }
            target.push_str(word);
        }
        if text.ends_with(char::is_whitespace) && !target.is_empty() && !target.ends_with(' ') {
            target.push(' ');
        }
    }

    fn end_paragraph(&mut self) {
        let paragraph = std::mem::take(&mut self.current);
        let lines: Vec<String> = paragraph
            .lines()
            .map(str::trim_end)
            .filter(|line| !line.trim().is_empty())
            .map(escape_markdown_line)
            .collect();
        if !lines.is_empty() {
            self.paragraphs.push(lines.join("\n").trim().to_string());
        }
    }

    fn close_heading(&mut self) {
        if let Some((level, text)) = self.heading.take() {
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if !text.is_empty() {
                self.paragraphs
                    .push(format!("{} {text}", "#".repeat(level)));
            }
        }
    }
}

/// A line of text that would read as a Markdown heading or code fence, with a backslash
/// before its first character (after its indentation, which is kept).
fn escape_markdown_line(line: &str) -> String {
    let start = line.trim_start();
    if start.starts_with('#') || start.starts_with("```") {
        let indent = &line[..line.len() - start.len()];
        format!("{indent}\\{start}")
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::to_markdown as to_markdown_checked;

    fn to_markdown(page: &str) -> String {
        to_markdown_checked(page).unwrap()
    }

    #[test]
    fn headings_paragraphs_and_no_scripts() {
        let page = "<!doctype html><html><head><title>T</title><style>p{}</style></head>\
            <body><h1>Guide</h1><p>Intro <b>bold</b> text &amp; more.</p>\
            <script>if (a < b) { document.write('<p>x</p>') }</script>\
            <h2>Install <small>v2</small></h2><ul><li>one</li><li>two</li></ul>\
            <pre>a\n  b</pre><template>hidden</template></body></html>";
        assert_eq!(
            to_markdown(page),
            "# Guide\n\nIntro bold text & more.\n\n## Install v2\n\none\n\ntwo\n\na\n  b"
        );
    }

    #[test]
    fn deep_nesting_is_read_in_linear_time() {
        let page = format!(
            "{}deep{}",
            "<div>".repeat(100_000),
            "</div>".repeat(100_000)
        );
        assert_eq!(to_markdown(&page), "deep");
    }

    #[test]
    fn text_that_reads_as_markdown_syntax_is_escaped() {
        assert_eq!(
            to_markdown("<h1>Title</h1><p>#not a heading</p><pre>x\n  ## nor this\n```</pre>"),
            "# Title\n\n\\#not a heading\n\nx\n  \\## nor this\n\\```"
        );
    }

    #[test]
    fn a_page_with_a_tag_over_64_kib_is_refused() {
        let attributes: String = (0..100_000).map(|i| format!(" a{i}")).collect();
        let page = format!("<p>before</p><p{attributes}>text</p>");
        assert_eq!(
            to_markdown_checked(&page),
            Err(super::Refused::TagTooLong { offset: 13 })
        );
        // Unclosed at the end counts the same; long text between tags does not.
        assert!(to_markdown_checked(&format!("<p{attributes}")).is_err());
        let text = "word ".repeat(100_000);
        assert_eq!(to_markdown(&format!("<p>{text}</p>")), text.trim());
    }
}
