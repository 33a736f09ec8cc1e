//! Splitting Markdown or plain text into size-bounded, overlapping chunks for embedding.
//!
//! The text is cut into paragraphs at blank lines. Paragraphs are packed greedily into
//! chunks; a paragraph too long for one chunk is split at the last sentence end that fits,
//! else at the last whitespace, else (a very long word, or text without spaces) at a
//! character boundary. Each chunk after the first starts with the last few words of the one
//! before it, so a sentence cut at a chunk edge is still seen whole by one of them.
//!
//! Sizes count Unicode scalar values (`char`s), not bytes, and a cut never falls inside a
//! UTF-8 sequence.
//!
//! Invariant: every chunk has at most `max(max_chars, 1)` chars, the overlap included.
//! Invariant: dropping each chunk's overlap prefix and concatenating the rest gives the input
//! minus only whitespace (every other character appears once, in order).
//!
//! Not handled: Markdown structure beyond blank lines. A fenced code block containing blank
//! lines is treated as several paragraphs (they are usually packed back together).

/// Size limits for [`chunk_text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkerOptions {
    /// Longest chunk, in chars, overlap included. Default 1000 (about 250 BERT tokens of
    /// English, under all-MiniLM-L6-v2's 256). 0 is treated as 1.
    pub max_chars: usize,
    /// How much of the previous chunk's end to repeat at the start of the next, in chars.
    /// Default 150. Capped at a quarter of `max_chars`, so most of every chunk is new text;
    /// the repeated part starts at a word boundary where there is one, so it can be shorter.
    pub overlap_chars: usize,
}

impl Default for ChunkerOptions {
    fn default() -> Self {
        Self {
            max_chars: 1000,
            overlap_chars: 150,
        }
    }
}

/// Splits `text` into chunks of at most `options.max_chars` chars (see [`ChunkerOptions`]).
///
/// Returns no chunks for text that is empty or only whitespace. The result depends only on
/// the text and the options.
pub fn chunk_text(text: &str, options: &ChunkerOptions) -> Vec<String> {
    plan_chunks(text, options)
        .into_iter()
        .map(|chunk| chunk.text)
        .collect()
}

/// One chunk, with how much of its start is repeated from the previous chunk (for tests).
#[derive(Debug)]
struct PlannedChunk {
    text: String,
    /// Bytes at the start of `text` that repeat the previous chunk, separator included.
    #[cfg_attr(not(test), allow(dead_code))] // read by the invariant tests
    overlap_bytes: usize,
}

/// A paragraph or a part of one, at most the content budget long.
struct Piece<'a> {
    text: &'a str,
    /// True if this piece continues the paragraph of the piece before it.
    continues_paragraph: bool,
}

fn plan_chunks(text: &str, options: &ChunkerOptions) -> Vec<PlannedChunk> {
    let max_chars = options.max_chars.max(1);
    let overlap_chars = options.overlap_chars.min(max_chars / 4);
    // Room for new text once the overlap and its separator (at most 2 chars) are in.
    let piece_budget = if overlap_chars == 0 {
        max_chars
    } else {
        max_chars - overlap_chars - 2
    };

    let mut pieces = Vec::new();
    for paragraph in paragraphs(text) {
        split_paragraph(paragraph, piece_budget, &mut pieces);
    }

    let mut chunks: Vec<PlannedChunk> = Vec::new();
    let mut current = String::new();
    let mut current_chars = 0;
    let mut overlap_bytes = 0;
    for piece in pieces {
        let piece_chars = piece.text.chars().count();
        let separator = if piece.continues_paragraph {
            " "
        } else {
            "\n\n"
        };
        let separator_chars = if current.is_empty() {
            0
        } else {
            separator.len()
        };
        if !current.is_empty() && current_chars + separator_chars + piece_chars > max_chars {
            let overlap = overlap_tail(&current, overlap_chars).to_owned();
            chunks.push(PlannedChunk {
                text: std::mem::take(&mut current),
                overlap_bytes,
            });
            current_chars = 0;
            overlap_bytes = 0;
            if !overlap.is_empty() {
                current.push_str(&overlap);
                current.push_str(separator);
                current_chars = overlap.chars().count() + separator.len();
                overlap_bytes = current.len();
            }
        } else if !current.is_empty() {
            current.push_str(separator);
            current_chars += separator.len();
        }
        current.push_str(piece.text);
        current_chars += piece_chars;
    }
    if !current.is_empty() {
        chunks.push(PlannedChunk {
            text: current,
            overlap_bytes,
        });
    }
    debug_assert!(chunks
        .iter()
        .all(|chunk| chunk.text.chars().count() <= max_chars));
    chunks
}

/// Non-blank runs of lines, separated by lines that are empty or only whitespace.
fn paragraphs(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        // Skip leading blank lines (and leading whitespace: paragraphs start at content).
        rest = rest.trim_start();
        if rest.is_empty() {
            return None;
        }
        let mut end = rest.len();
        let mut line_start = 0;
        while let Some(newline) = rest[line_start..].find('\n') {
            let next_line = line_start + newline + 1;
            let line_end = rest[next_line..]
                .find('\n')
                .map_or(rest.len(), |i| next_line + i);
            if rest[next_line..line_end].trim().is_empty() {
                end = line_start + newline;
                break;
            }
            line_start = next_line;
        }
        let paragraph = rest[..end].trim_end();
        rest = &rest[end..];
        Some(paragraph)
    })
}

/// Appends `paragraph` to `pieces`, cut into parts of at most `budget` chars.
fn split_paragraph<'a>(paragraph: &'a str, budget: usize, pieces: &mut Vec<Piece<'a>>) {
    let mut rest = paragraph;
    let mut continues_paragraph = false;
    while !rest.is_empty() {
        let cut = cut_point(rest, budget);
        let (head, tail) = rest.split_at(cut);
        let head = head.trim_end();
        if !head.is_empty() {
            pieces.push(Piece {
                text: head,
                continues_paragraph,
            });
            continues_paragraph = true;
        }
        rest = tail.trim_start();
    }
}

/// The byte index at which to cut `text` so the head has at most `budget` chars: the whole
/// text if it fits, else after the last sentence end in the window (if not too early), else
/// at the last whitespace, else at the budget-th char boundary.
fn cut_point(text: &str, budget: usize) -> usize {
    let Some((window_end, _)) = text.char_indices().nth(budget) else {
        return text.len();
    };
    // A sentence cut is only taken if it keeps at least a third of the budget, so pieces
    // don't shrink to a few words when a long sentence follows a short one.
    let min_sentence_chars = budget / 3;
    let mut last_sentence_end = None;
    let mut last_whitespace = None;
    let mut previous: Option<char> = None;
    for (chars_before, (index, c)) in text.char_indices().take(budget + 1).enumerate() {
        if c.is_whitespace() && chars_before > 0 {
            last_whitespace = Some(index);
            if matches!(previous, Some('.' | '!' | '?' | ';' | ':'))
                && chars_before >= min_sentence_chars
            {
                last_sentence_end = Some(index);
            }
        }
        if matches!(previous, Some('。' | '！' | '？')) && chars_before >= min_sentence_chars {
            last_sentence_end = Some(index);
        }
        previous = Some(c);
    }
    last_sentence_end.or(last_whitespace).unwrap_or(window_end)
}

/// The last at most `overlap_chars` chars of `chunk`, starting at a word boundary if the
/// window contains one.
fn overlap_tail(chunk: &str, overlap_chars: usize) -> &str {
    if overlap_chars == 0 {
        return "";
    }
    let start = chunk
        .char_indices()
        .rev()
        .nth(overlap_chars - 1)
        .map_or(0, |(index, _)| index);
    let tail = &chunk[start..];
    let starts_at_word = start == 0 || chunk[..start].ends_with(char::is_whitespace);
    let tail = if starts_at_word {
        tail
    } else {
        match tail.find(char::is_whitespace) {
            Some(space) => &tail[space..],
            // One long word or unspaced script: keep the char-boundary cut.
            None => tail,
        }
    };
    tail.trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn without_whitespace(s: &str) -> String {
        s.chars().filter(|c| !c.is_whitespace()).collect()
    }

    /// Checks both module invariants for one input.
    fn check_invariants(text: &str, options: &ChunkerOptions) {
        let planned = plan_chunks(text, options);
        let max_chars = options.max_chars.max(1);
        for chunk in &planned {
            let chars = chunk.text.chars().count();
            assert!(chars <= max_chars, "chunk of {chars} chars > {max_chars}");
            assert!(!chunk.text.trim().is_empty(), "blank chunk");
        }
        let content: String = planned
            .iter()
            .map(|chunk| &chunk.text[chunk.overlap_bytes..])
            .collect();
        assert_eq!(without_whitespace(&content), without_whitespace(text));
        for pair in planned.windows(2) {
            let overlap = pair[1].text[..pair[1].overlap_bytes].trim_end();
            assert!(
                pair[0].text.ends_with(overlap),
                "overlap is not the previous tail"
            );
        }
    }

    #[test]
    fn empty_and_blank_input_give_no_chunks() {
        let options = ChunkerOptions::default();
        assert!(chunk_text("", &options).is_empty());
        assert!(chunk_text(" \n\n\t \r\n ", &options).is_empty());
    }

    #[test]
    fn short_paragraphs_are_packed_into_one_chunk() {
        let text = "# Title\n\nFirst paragraph.\n\n\n  \nSecond paragraph,\nwith two lines.\n";
        let chunks = chunk_text(text, &ChunkerOptions::default());
        assert_eq!(
            chunks,
            vec!["# Title\n\nFirst paragraph.\n\nSecond paragraph,\nwith two lines."]
        );
    }

    #[test]
    fn paragraphs_are_not_split_when_they_fit() {
        let paragraph = "word ".repeat(30); // 150 chars
        let text = [paragraph.as_str(); 10].join("\n\n");
        let options = ChunkerOptions {
            max_chars: 400,
            overlap_chars: 0,
        };
        let chunks = chunk_text(&text, &options);
        assert_eq!(chunks.len(), 5);
        for chunk in &chunks {
            assert_eq!(chunk.matches("\n\n").count(), 1, "{chunk:?}");
        }
        check_invariants(&text, &options);
    }

    #[test]
    fn long_paragraph_is_split_at_sentence_ends() {
        let sentence = "This sentence has exactly forty-eight characters. ";
        let text = sentence.repeat(40);
        let options = ChunkerOptions {
            max_chars: 300,
            overlap_chars: 60,
        };
        let chunks = chunk_text(&text, &options);
        assert!(chunks.len() > 5);
        for chunk in &chunks {
            assert!(chunk.ends_with("characters."), "{chunk:?}");
        }
        check_invariants(&text, &options);
    }

    #[test]
    fn overlap_starts_at_a_word_and_repeats_the_previous_tail() {
        let text = (0..200)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        let options = ChunkerOptions {
            max_chars: 100,
            overlap_chars: 20,
        };
        let chunks = chunk_text(&text, &options);
        for pair in chunks.windows(2) {
            let first_word = pair[1].split(' ').next().unwrap_or_default();
            assert!(first_word.starts_with('w'), "{first_word:?}");
            assert!(pair[0].ends_with(first_word) || pair[0].contains(&format!(" {first_word} ")));
        }
        check_invariants(&text, &options);
    }

    #[test]
    fn multibyte_text_without_spaces_is_cut_on_char_boundaries() {
        let text = "東京は日本の首都です。".repeat(50) + &"🦀".repeat(300) + "é";
        let options = ChunkerOptions {
            max_chars: 64,
            overlap_chars: 16,
        };
        let chunks = chunk_text(&text, &options);
        assert!(chunks.len() > 10);
        check_invariants(&text, &options);
    }

    #[test]
    fn degenerate_options_do_not_panic() {
        let text = "a b c d e f g. h i j k\n\nl m n o p";
        for (max_chars, overlap_chars) in [(0, 0), (1, 1), (2, 100), (4, 1), (5, 5), (7, 3)] {
            check_invariants(
                text,
                &ChunkerOptions {
                    max_chars,
                    overlap_chars,
                },
            );
        }
    }

    #[test]
    fn default_options_keep_the_documented_bound() {
        let text = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(200)
            + "\n\n"
            + &"x".repeat(3000);
        check_invariants(&text, &ChunkerOptions::default());
    }

    proptest! {
        #[test]
        fn never_panics_and_keeps_invariants(
            text in "(\\PC|\\s|\n\n){0,400}",
            max_chars in 0usize..120,
            overlap_chars in 0usize..60,
        ) {
            check_invariants(&text, &ChunkerOptions { max_chars, overlap_chars });
        }

        #[test]
        fn never_panics_on_arbitrary_strings(text in any::<String>(), max_chars in 0usize..50) {
            let _ = chunk_text(&text, &ChunkerOptions { max_chars, overlap_chars: max_chars / 3 });
        }
    }
}
