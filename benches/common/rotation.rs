//! One bench path's current store file, rotated so that every path is measured on files of
//! the same sizes, whatever its speed (see `benches/group_commit.rs`).

use std::path::{Path, PathBuf};

/// The most documents one path writes into one file before it starts a new one.
pub const STORE_DOCS: u64 = 32_768;

/// One path's current file, replaced by a new, empty one (the old one closed and deleted,
/// outside the timed part) before it would hold more than [`STORE_DOCS`] documents.
pub struct Rotation<T> {
    dir: PathBuf,
    name: &'static str,
    open: fn(&Path) -> T,
    current: Option<T>,
    written: u64,
    files: u32,
}

impl<T> Rotation<T> {
    pub fn new(dir: &Path, name: &'static str, open: fn(&Path) -> T) -> Rotation<T> {
        Rotation {
            dir: dir.to_path_buf(),
            name,
            open,
            current: None,
            written: 0,
            files: 0,
        }
    }

    /// The file to write the next `docs` documents into.
    pub fn room_for(&mut self, docs: u64) -> &mut T {
        if self.current.is_none() || self.written + docs > STORE_DOCS {
            self.close();
            self.files += 1;
            let path = self.dir.join(format!("{}-{}", self.name, self.files));
            self.current = Some((self.open)(&path));
            self.written = 0;
        }
        self.written += docs;
        self.current.as_mut().expect("opened above")
    }

    /// Closes the current file and deletes it (`{stem}.redb`, or `{stem}.sqlite` and SQLite's
    /// `-wal` and `-shm` side files).
    pub fn close(&mut self) {
        if self.current.take().is_some() {
            let stem = format!("{}-{}", self.name, self.files);
            let side_files = format!("{stem}.");
            for entry in std::fs::read_dir(&self.dir).expect("bench dir").flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name == stem || name.starts_with(&side_files) {
                    std::fs::remove_file(entry.path()).expect("remove old bench file");
                }
            }
        }
    }
}
