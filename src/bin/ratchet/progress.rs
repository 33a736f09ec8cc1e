//! Progress on stderr: a bar (indicatif) on a terminal, a plain line every few seconds
//! otherwise (a log file or CI output gets a heartbeat, not escape codes).
//!
//! The plain heartbeat has its own thread, so it keeps its interval however long one batch
//! takes (embedding a batch can take many seconds, and a line printed only when a batch ends
//! came every ~13 s instead of every 2).

use crossbeam_channel::{bounded, RecvTimeoutError, Sender};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the plain form prints a line.
pub const PLAIN_INTERVAL: Duration = Duration::from_secs(2);

/// A progress display shared by the threads of one command.
pub struct Progress {
    /// Hidden when stderr is not a terminal.
    bar: ProgressBar,
    /// The plain form's state and its heartbeat thread, when stderr is not a terminal.
    plain: Option<Heartbeat>,
}

struct Heartbeat {
    state: Arc<Mutex<Plain>>,
    /// Dropped (or sent to) to stop the thread.
    stop: Mutex<Option<Sender<()>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

struct Plain {
    label: &'static str,
    unit: &'static str,
    total: u64,
    done: u64,
    detail: String,
    started: Instant,
}

impl Plain {
    fn line(&self) -> String {
        let percent = if self.total == 0 {
            100.0
        } else {
            self.done as f64 * 100.0 / self.total as f64
        };
        let detail = if self.detail.is_empty() {
            String::new()
        } else {
            format!(", {}", self.detail)
        };
        format!(
            "{}: {}/{} {} ({percent:.0}%){detail}, {:.1}s",
            self.label,
            self.done,
            self.total,
            self.unit,
            self.started.elapsed().as_secs_f64()
        )
    }
}

impl Progress {
    /// Progress over `total` items of `unit` (e.g. "files").
    pub fn new(label: &'static str, unit: &'static str, total: u64) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        if terminal {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let template = format!(
                "{label} {{bar:30}} {{pos}}/{{len}} {unit} ({{per_sec}}, {{eta}} left) {{msg}}"
            );
            bar.set_style(
                ProgressStyle::with_template(&template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            return Progress { bar, plain: None };
        }
        Progress::plain(
            label,
            unit,
            total,
            PLAIN_INTERVAL,
            Box::new(|line| eprintln!("{line}")),
        )
    }

    /// The plain form, giving `print` a line every `interval` until [`Progress::finish`].
    fn plain(
        label: &'static str,
        unit: &'static str,
        total: u64,
        interval: Duration,
        print: Box<dyn Fn(String) + Send>,
    ) -> Progress {
        let state = Arc::new(Mutex::new(Plain {
            label,
            unit,
            total,
            done: 0,
            detail: String::new(),
            started: Instant::now(),
        }));
        let (stop, stopped) = bounded::<()>(1);
        let shared = state.clone();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                // Until told to stop, or until the sender is gone.
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                    let line = shared.lock().unwrap_or_else(|e| e.into_inner()).line();
                    print(line);
                }
            })
            .ok();
        Progress {
            bar: ProgressBar::hidden(),
            plain: Some(Heartbeat {
                state,
                stop: Mutex::new(Some(stop)),
                thread: Mutex::new(thread),
            }),
        }
    }

    /// `n` more items done; `detail` says what else has happened (shown with the count).
    pub fn advance(&self, n: u64, detail: impl FnOnce() -> String) {
        self.bar.inc(n);
        match &self.plain {
            Some(heartbeat) => {
                let mut plain = heartbeat.state.lock().unwrap_or_else(|e| e.into_inner());
                plain.done += n;
                plain.detail = detail();
            }
            None => self.bar.set_message(detail()),
        }
    }

    /// The plain form's line as it would print now (`None` on a terminal).
    #[cfg(test)]
    pub fn plain_line(&self) -> Option<String> {
        self.plain.as_ref().map(|heartbeat| {
            heartbeat
                .state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .line()
        })
    }

    /// The plain form printing nowhere (its heartbeat never fires in a test), for reading
    /// [`Progress::plain_line`].
    #[cfg(test)]
    pub fn silent(label: &'static str, unit: &'static str, total: u64) -> Progress {
        Progress::plain(
            label,
            unit,
            total,
            Duration::from_secs(3600),
            Box::new(|_| {}),
        )
    }

    /// Prints a line on stderr without tearing the bar.
    pub fn println(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }

    /// Removes the bar, or stops the heartbeat.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
        if let Some(heartbeat) = &self.plain {
            drop(
                heartbeat
                    .stop
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take(),
            );
            let thread = heartbeat
                .thread
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(thread) = thread {
                let _ = thread.join();
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (issue 18, defect 6): the plain heartbeat printed only when a batch ended,
    /// so a slow batch stretched the configured 2 s to ~13 s. It now keeps its interval
    /// while nothing advances at all.
    #[test]
    fn the_heartbeat_keeps_its_interval_while_nothing_advances() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let progress = Progress::plain(
            "ingest",
            "files",
            10,
            Duration::from_millis(50),
            Box::new(move |line| sink.lock().unwrap_or_else(|e| e.into_inner()).push(line)),
        );
        progress.advance(3, || "7 chunks embedded".to_string());
        std::thread::sleep(Duration::from_millis(500));
        progress.finish();
        let lines = lines.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // Ten intervals passed: on a loaded machine some ticks come late, never none.
        assert!(lines.len() >= 4, "{lines:?}");
        assert!(
            lines[0].starts_with("ingest: 3/10 files (30%), 7 chunks embedded,"),
            "{lines:?}"
        );
        // Finished: no line after.
        let count = lines.len();
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(count, lines.len());
    }
}
