//! Progress on stderr: a bar (indicatif) on a terminal, a plain line every few seconds
//! otherwise (a log file or CI output gets a heartbeat, not escape codes).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often the plain form prints a line.
const PLAIN_INTERVAL: Duration = Duration::from_secs(2);

/// A progress display shared by the threads of one command.
pub struct Progress {
    /// Hidden when stderr is not a terminal.
    bar: ProgressBar,
    /// The plain form's state, when stderr is not a terminal.
    plain: Option<Mutex<Plain>>,
}

struct Plain {
    label: &'static str,
    unit: &'static str,
    total: u64,
    done: u64,
    started: Instant,
    last_line: Instant,
}

impl Progress {
    /// Progress over `total` items of `unit` (e.g. "files").
    pub fn new(label: &'static str, unit: &'static str, total: u64) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let bar = if terminal {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let template = format!(
                "{label} {{bar:30}} {{pos}}/{{len}} {unit} ({{per_sec}}, {{eta}} left) {{msg}}"
            );
            bar.set_style(
                ProgressStyle::with_template(&template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        } else {
            ProgressBar::hidden()
        };
        let now = Instant::now();
        Progress {
            bar,
            plain: (!terminal).then(|| {
                Mutex::new(Plain {
                    label,
                    unit,
                    total,
                    done: 0,
                    started: now,
                    last_line: now,
                })
            }),
        }
    }

    /// `n` more items done; `detail` says what else has happened (shown with the count).
    pub fn advance(&self, n: u64, detail: impl FnOnce() -> String) {
        self.bar.inc(n);
        if let Some(plain) = &self.plain {
            let mut plain = plain.lock().unwrap_or_else(|e| e.into_inner());
            plain.done += n;
            if plain.last_line.elapsed() >= PLAIN_INTERVAL {
                plain.last_line = Instant::now();
                let percent = if plain.total == 0 {
                    100.0
                } else {
                    plain.done as f64 * 100.0 / plain.total as f64
                };
                eprintln!(
                    "{}: {}/{} {} ({percent:.0}%), {}, {:.1}s",
                    plain.label,
                    plain.done,
                    plain.total,
                    plain.unit,
                    detail(),
                    plain.started.elapsed().as_secs_f64()
                );
            }
        } else {
            self.bar.set_message(detail());
        }
    }

    /// Prints a line on stderr without tearing the bar.
    pub fn println(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
