//! Standard output that survives its reader going away.
//!
//! `ratchet export | head` closes the pipe early. Rust ignores SIGPIPE, so the next write
//! fails with `BrokenPipe`; that is the reader's choice, not an error. The writer notes it,
//! drops everything after, and lets the command finish with success.

use crate::Failure;
use serde::Serialize;
use std::io::{self, BufWriter, StdoutLock, Write};

/// `n` and the noun, singular for one: "1 file", "2 files", "0 files".
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub struct Output {
    out: BufWriter<StdoutLock<'static>>,
    closed: bool,
}

impl Output {
    pub fn stdout() -> Output {
        Output {
            out: BufWriter::with_capacity(1 << 16, io::stdout().lock()),
            closed: false,
        }
    }

    /// Whether the reader has gone away (everything written since was dropped).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// One JSON value on its own line.
    pub fn json_line(&mut self, value: &impl Serialize) -> Result<(), Failure> {
        if self.closed {
            return Ok(());
        }
        let result = serde_json::to_writer(&mut self.out, value)
            .map_err(io::Error::from)
            .and_then(|()| self.out.write_all(b"\n"));
        self.settle(result)
    }

    /// One line of text.
    pub fn text_line(&mut self, text: &str) -> Result<(), Failure> {
        if self.closed {
            return Ok(());
        }
        let result = writeln!(self.out, "{text}");
        self.settle(result)
    }

    /// Everything `reader` holds, as it is (lines written before, e.g. to a temporary file).
    pub fn copy_from(&mut self, reader: &mut impl io::Read) -> Result<(), Failure> {
        let mut buf = vec![0; 1 << 16];
        loop {
            if self.closed {
                return Ok(());
            }
            let n = match reader.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Failure(format!("reading back what was to be written: {e}"))),
            };
            let result = self.out.write_all(&buf[..n]);
            self.settle(result)?;
        }
    }

    /// Writes out what is buffered, so far (a long command shows its progress).
    pub fn flush(&mut self) -> Result<(), Failure> {
        if self.closed {
            return Ok(());
        }
        let result = self.out.flush();
        self.settle(result)
    }

    /// Flushes what is buffered.
    pub fn finish(mut self) -> Result<(), Failure> {
        if self.closed {
            return Ok(());
        }
        let result = self.out.flush();
        self.settle(result)
    }

    fn settle(&mut self, result: io::Result<()>) -> Result<(), Failure> {
        match result {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(error) => Err(Failure(format!("writing to stdout: {error}"))),
        }
    }
}
