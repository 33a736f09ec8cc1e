//! HTML pages (`.html`, `.htm`) for folder ingest: the text of the markup, read by an HTML5
//! parser (`scraper`, on html5ever), as the Markdown the chunker and the metadata already
//! understand.
//!
//! Headings `<h1>`..`<h6>` become `#`..`######` lines, so a page's headings feed the chunks'
//! `title` and `headings` as a Markdown file's do; block elements (paragraphs, list items,
//! table rows, `<br>`, ...) end paragraphs; runs of whitespace become one space, except in
//! `<pre>`, whose lines are kept. What a reader never sees is dropped: `<script>`, `<style>`,
//! `<template>`, `<noscript>`, `<head>` (the `<title>` too: the first heading names the
//! page), comments. The tree is walked without recursion, so no nesting depth can exhaust
//! the stack.

use ego_tree::iter::Edge;
use scraper::{Html, Node};

/// Elements whose content is never text a reader sees.
const HIDDEN: &[&str] = &[
    "script", "style", "template", "noscript", "head", "iframe", "object", "svg", "math",
];

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

/// The page's text as Markdown: paragraphs separated by blank lines, headings as `#` lines.
pub fn to_markdown(page: &str) -> String {
    let document = Html::parse_document(page);
    let mut out = Markdown::default();
    // Depth inside hidden elements, and inside `<pre>`.
    let (mut hidden, mut pre) = (0usize, 0usize);
    for edge in document.tree.root().traverse() {
        match edge {
            Edge::Open(node) => match node.value() {
                Node::Element(element) => {
                    let name = element.name();
                    if HIDDEN.contains(&name) {
                        hidden += 1;
                    } else if hidden > 0 {
                    } else if let Some(level) = heading_level(name) {
                        out.open_heading(level);
                    } else if BLOCKS.contains(&name) {
                        out.end_paragraph();
                        pre += usize::from(name == "pre");
                    }
                }
                Node::Text(text) if hidden == 0 => out.text(&**text, pre > 0),
                _ => {}
            },
            Edge::Close(node) => {
                if let Node::Element(element) = node.value() {
                    let name = element.name();
                    if HIDDEN.contains(&name) {
                        hidden = hidden.saturating_sub(1);
                    } else if hidden > 0 {
                    } else if heading_level(name).is_some() {
                        out.close_heading();
                    } else if BLOCKS.contains(&name) {
                        out.end_paragraph();
                        pre = pre.saturating_sub(usize::from(name == "pre"));
                    }
                }
            }
        }
    }
    out.end_paragraph();
    out.paragraphs.join("\n\n")
}

/// The Markdown being written.
#[derive(Default)]
struct Markdown {
    paragraphs: Vec<String>,
    /// The paragraph being written.
    current: String,
    /// The heading being written, with its level (headings do not nest).
    heading: Option<(usize, String)>,
}

impl Markdown {
    fn text(&mut self, text: &str, keep_lines: bool) {
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
        if self.heading.is_some() {
            // A block inside a heading (`<h2><div>..</div></h2>`): the heading goes on.
            return;
        }
        let paragraph = std::mem::take(&mut self.current);
        let lines: Vec<&str> = paragraph
            .lines()
            .map(str::trim_end)
            .filter(|line| !line.trim().is_empty())
            .collect();
        if !lines.is_empty() {
            self.paragraphs.push(lines.join("\n").trim().to_string());
        }
    }

    fn open_heading(&mut self, level: usize) {
        self.end_paragraph();
        if self.heading.is_none() {
            self.heading = Some((level, String::new()));
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

#[cfg(test)]
mod tests {
    use super::to_markdown;

    #[test]
    fn headings_paragraphs_and_no_scripts() {
        let page = "<!doctype html><html><head><title>T</title><style>p{}</style></head>\
            <body><h1>Guide</h1><p>Intro <b>bold</b> text.</p><script>var x = 1;</script>\
            <h2>Install <small>v2</small></h2><ul><li>one</li><li>two</li></ul>\
            <pre>a\n  b</pre></body></html>";
        assert_eq!(
            to_markdown(page),
            "# Guide\n\nIntro bold text.\n\n## Install v2\n\none\n\ntwo\n\na\n  b"
        );
    }

    #[test]
    fn deep_nesting_does_not_exhaust_the_stack() {
        let page = format!(
            "{}deep{}",
            "<div>".repeat(100_000),
            "</div>".repeat(100_000)
        );
        assert_eq!(to_markdown(&page), "deep");
    }
}
