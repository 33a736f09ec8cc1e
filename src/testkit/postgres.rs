//! Raw SQL for the Postgres backend's tests (what only a server shows: other sessions'
//! transactions, dropping a test's schema), so the tests need no client crate of their own.

/// Runs `sql` (one or more statements) on a new connection to `url`.
pub fn pg_execute(url: &str, sql: &str) -> Result<(), String> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).map_err(|e| e.to_string())?;
    client.batch_execute(sql).map_err(|e| e.to_string())
}

/// Runs a query returning one `bigint` on a new connection to `url`.
pub fn pg_query_i64(url: &str, sql: &str) -> Result<i64, String> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).map_err(|e| e.to_string())?;
    let row = client.query_one(sql, &[]).map_err(|e| e.to_string())?;
    row.try_get(0).map_err(|e| e.to_string())
}
