//! Where a property's stores live: [`Fixture`] and its two implementations, redb files in a
//! temporary directory ([`Redb`]) and fresh schemas on the PostgreSQL server at
//! `RATCHETDB_PG_URL` ([`Postgres`], the `postgres` feature), and the [`conformance!`]
//! macro that runs each property once per backend.
#![allow(dead_code)]

use ratchetdb::{Options, Store};

/// The stores of one property's run on one backend. Every store is named (`"db"`,
/// `"other"`...): the first use of a name is an empty store, later ones reopen it. Stores
/// are opened through the public `Store` API only, on the fixture's [`address`](Fixture::address).
pub trait Fixture: Sync {
    /// The backend's name, as the test module names it (`redb`, `postgres`).
    fn backend(&self) -> &'static str;

    /// The address `Store::open` takes for the store called `name`: a file path, or a
    /// `postgres://…?schema=…` URL.
    fn address(&self, name: &str) -> String;

    /// Whether the store called `name` exists (a file, or a schema on the server).
    fn exists(&self, name: &str) -> bool;

    /// Whether this is the PostgreSQL backend.
    fn is_postgres(&self) -> bool {
        self.backend() == "postgres"
    }

    /// The PostgreSQL fixture itself, for a property's server-side check of the rows.
    #[cfg(feature = "postgres")]
    fn as_postgres(&self) -> Option<&Postgres> {
        None
    }

    /// Opens (or creates) the store called `name`, with dimension 3.
    fn open(&self, name: &str) -> Store {
        self.open_with(name, Options::default().dimension(3))
    }

    /// Opens (or creates) the store called `name` with `options`.
    fn open_with(&self, name: &str, options: Options) -> Store {
        Store::open(self.address(name), options)
            .unwrap_or_else(|e| panic!("open {name} on {}: {e}", self.backend()))
    }
}

/// redb files in a temporary directory (removed with the fixture).
pub struct Redb(tempfile::TempDir);

impl Redb {
    /// Files in a new temporary directory.
    pub fn new() -> Redb {
        Redb(tempfile::tempdir().expect("a temporary directory"))
    }
}

impl Fixture for Redb {
    fn backend(&self) -> &'static str {
        "redb"
    }

    fn address(&self, name: &str) -> String {
        self.0
            .path()
            .join(format!("{name}.redb"))
            .display()
            .to_string()
    }

    fn exists(&self, name: &str) -> bool {
        self.0.path().join(format!("{name}.redb")).exists()
    }
}

/// Schemas of their own on the PostgreSQL server at `RATCHETDB_PG_URL`: each is dropped the
/// first time the fixture names it (so every run starts empty) and again when the fixture
/// is dropped.
#[cfg(feature = "postgres")]
pub struct Postgres {
    url: String,
    test: String,
    named: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

#[cfg(feature = "postgres")]
impl Postgres {
    /// The server, or `None` after saying that `test` skipped for want of one.
    pub fn new(test: &str) -> Option<Postgres> {
        match std::env::var("RATCHETDB_PG_URL") {
            Ok(url) if !url.is_empty() => Some(Postgres {
                url,
                test: test.to_string(),
                named: Default::default(),
            }),
            _ => {
                say_skipped(test);
                None
            }
        }
    }

    /// The server's URL (no schema).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The schema of the store called `name` (PostgreSQL names are at most 63 bytes: the
    /// test by its hash; the process id keeps concurrent runs apart).
    pub fn schema(&self, name: &str) -> String {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.test.hash(&mut hasher);
        format!("c_{:016x}_{name}_{}", hasher.finish(), std::process::id()).to_lowercase()
    }

    fn drop_schema(&self, schema: &str) -> Result<(), String> {
        ratchetdb::testkit::pg_execute(
            &self.url,
            &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"),
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    }
}

#[cfg(feature = "postgres")]
impl Fixture for Postgres {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    fn address(&self, name: &str) -> String {
        let schema = self.schema(name);
        let first = self
            .named
            .lock()
            .expect("the fixture's names")
            .insert(schema.clone());
        if first {
            self.drop_schema(&schema)
                .unwrap_or_else(|e| panic!("drop schema {schema}: {e}"));
        }
        let separator = if self.url.contains('?') { '&' } else { '?' };
        format!("{}{separator}schema={schema}", self.url)
    }

    fn as_postgres(&self) -> Option<&Postgres> {
        Some(self)
    }

    fn exists(&self, name: &str) -> bool {
        let count = ratchetdb::testkit::pg_query_i64(
            &self.url,
            &format!(
                "SELECT count(*) FROM pg_namespace WHERE nspname = '{}'",
                self.schema(name)
            ),
        )
        .expect("query the server's schemas");
        count > 0
    }
}

#[cfg(feature = "postgres")]
impl Drop for Postgres {
    fn drop(&mut self) {
        // Best effort, and not on a failing test (its schemas are left to look at).
        if std::thread::panicking() {
            return;
        }
        let named = std::mem::take(&mut *self.named.lock().unwrap_or_else(|e| e.into_inner()));
        for schema in named {
            let _ = self.drop_schema(&schema);
        }
    }
}

/// Tells the person running the tests that the running test skipped for want of a server.
///
/// libtest has no runtime "ignored", and it captures `eprintln!` (shown only when a test
/// fails), so a skipped test would read `... ok` and nothing else. A write to
/// `std::io::stdout()` itself (not through the print macros) is not captured: the line
/// shows whole among libtest's own, naming the test (libtest names each test's thread after
/// it). Under `cargo nextest`, which keeps a passing test's output, pass `--no-capture`.
#[cfg(feature = "postgres")]
fn say_skipped(test: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let name = thread.name().filter(|n| *n != "main").unwrap_or(test);
    let _ = writeln!(
        std::io::stdout().lock(),
        "test {name} SKIPPED: RATCHETDB_PG_URL is not set (scripts/postgres.sh start prints it)"
    );
}

/// Runs `property` on redb files.
pub fn on_redb(property: fn(&dyn Fixture)) {
    property(&Redb::new());
}

/// Runs `property` on the PostgreSQL server, or says it skipped without one.
#[cfg(feature = "postgres")]
pub fn on_postgres(test: &str, property: fn(&dyn Fixture)) {
    if let Some(fixture) = Postgres::new(test) {
        property(&fixture);
    }
}

/// Runs each property `fn NAME(b: &dyn Fixture)` of the invoking module once per backend:
/// `redb::NAME`, and `postgres::NAME` with the `postgres` feature (which says it skipped,
/// and passes, without `RATCHETDB_PG_URL`). A backend's instance takes attributes after
/// the name: `conformance!(a, b [postgres: ignore = "drift: why"])`.
#[macro_export]
macro_rules! conformance {
    ($($property:ident $([redb: $redb:meta])? $([postgres: $postgres:meta])?),+ $(,)?) => {
        mod redb {
            $(
                #[test]
                $(#[$redb])?
                fn $property() {
                    $crate::fixture::on_redb(super::$property);
                }
            )+
        }

        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[test]
                $(#[$postgres])?
                fn $property() {
                    $crate::fixture::on_postgres(
                        concat!(module_path!(), "::", stringify!($property)),
                        super::$property,
                    );
                }
            )+
        }
    };
}
