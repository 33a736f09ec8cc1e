//! A metadata [`Filter`] as a SQL condition over the `jsonb` metadata of a chunk (`c.meta`)
//! and its document (`d.meta`), with the embedded store's exact semantics (`filter.rs`):
//!
//! - a path is looked up in the chunk's metadata, then the document's; a path descends
//!   only into objects (`->` with a text key, which yields NULL on an array or a scalar);
//! - values of different types never compare (each comparison first checks the value's
//!   `jsonb_typeof`); numbers compare as `float8` (64-bit floats, as the embedded store),
//!   strings by bytes (`COLLATE "C"`);
//! - a missing path satisfies only `$exists: false`; every leaf yields true or false,
//!   never NULL, so `$not` is plain negation.
//!
//! Every operator of the language is translated; operands are bound as parameters, never
//! spliced into the SQL text.

use crate::error::ReadError;
use crate::policy::filter::{Filter, Node, Op, Scalar};
use postgres::types::ToSql;

type Params = Vec<Box<dyn ToSql + Sync>>;

/// The condition for `filter`, its operands appended to `params` (numbered after the ones
/// already there).
pub(super) fn translate(filter: &Filter, params: &mut Params) -> Result<String, ReadError> {
    Ok(node(filter.node(), params))
}

fn node(tree: &Node, params: &mut Params) -> String {
    match tree {
        Node::And(nodes) if nodes.is_empty() => "true".into(),
        Node::Or(nodes) if nodes.is_empty() => "false".into(),
        Node::And(nodes) => join(nodes, " AND ", params),
        Node::Or(nodes) => join(nodes, " OR ", params),
        Node::Not(inner) => format!("(NOT {})", node(inner, params)),
        Node::Leaf { path, op } => leaf(path, op, params),
    }
}

fn join(nodes: &[Node], separator: &str, params: &mut Params) -> String {
    let parts: Vec<String> = nodes.iter().map(|n| node(n, params)).collect();
    format!("({})", parts.join(separator))
}

fn bind(params: &mut Params, value: Box<dyn ToSql + Sync>) -> String {
    params.push(value);
    format!("${}", params.len())
}

/// `meta -> $a -> $b ...`: NULL unless every step is an object holding the key.
fn lookup(meta: &str, path: &[String], params: &mut Params) -> String {
    let mut expr = meta.to_string();
    for key in path {
        let p = bind(params, Box::new(key.clone()));
        expr = format!("({expr} -> {p}::text)");
    }
    expr
}

/// The JSON type name a scalar's class has.
fn class(scalar: &Scalar) -> &'static str {
    match scalar {
        Scalar::Null => "null",
        Scalar::Bool(_) => "boolean",
        Scalar::Num(_) => "number",
        Scalar::Str(_) => "string",
    }
}

/// `v` (a non-NULL jsonb value) compares with `scalar` by `cmp` (`=`, `<`, ...), of the same
/// type. Null and booleans support only `=` here (the parser allows `$gt`... only on
/// numbers and strings).
fn compare(v: &str, cmp: &str, scalar: &Scalar, params: &mut Params) -> String {
    match scalar {
        Scalar::Null => format!("(jsonb_typeof({v}) = 'null')"),
        Scalar::Bool(b) => format!("({v} = '{b}'::jsonb)"),
        Scalar::Num(bits) => {
            let p = bind(params, Box::new(f64::from_bits(*bits)));
            format!("(jsonb_typeof({v}) = 'number' AND ({v} #>> '{{}}')::float8 {cmp} {p}::float8)")
        }
        Scalar::Str(s) => {
            let p = bind(params, Box::new(s.clone()));
            format!(
                "(jsonb_typeof({v}) = 'string' AND ({v} #>> '{{}}') COLLATE \"C\" {cmp} {p}::text COLLATE \"C\")"
            )
        }
    }
}

fn leaf(path: &[String], op: &Op, params: &mut Params) -> String {
    // An empty `$in` / `$nin` holds for nothing (before binding the path, so that no
    // parameter goes unused).
    if matches!(op, Op::In(list) | Op::Nin(list) if list.is_empty()) {
        return "false".into();
    }
    let chunk = lookup("c.meta", path, params);
    let doc = lookup("d.meta", path, params);
    let v = format!("COALESCE({chunk}, {doc})");
    let condition = match op {
        Op::Exists(true) => return format!("({v} IS NOT NULL)"),
        Op::Exists(false) => return format!("({v} IS NULL)"),
        Op::Eq(x) => compare(&v, "=", x, params),
        Op::Ne(x) => {
            let eq = compare(&v, "=", x, params);
            format!("(jsonb_typeof({v}) = '{}' AND NOT {eq})", class(x))
        }
        Op::Gt(x) => compare(&v, ">", x, params),
        Op::Gte(x) => compare(&v, ">=", x, params),
        Op::Lt(x) => compare(&v, "<", x, params),
        Op::Lte(x) => compare(&v, "<=", x, params),
        Op::In(list) => {
            let parts: Vec<String> = list.iter().map(|x| compare(&v, "=", x, params)).collect();
            if parts.is_empty() {
                "false".into()
            } else {
                format!("({})", parts.join(" OR "))
            }
        }
        Op::Nin(list) => {
            let mut classes: Vec<&str> = list.iter().map(class).collect();
            classes.sort_unstable();
            classes.dedup();
            let classes: Vec<String> = classes.iter().map(|c| format!("'{c}'")).collect();
            let parts: Vec<String> = list.iter().map(|x| compare(&v, "=", x, params)).collect();
            if parts.is_empty() {
                "false".into()
            } else {
                format!(
                    "(jsonb_typeof({v}) IN ({}) AND NOT ({}))",
                    classes.join(", "),
                    parts.join(" OR ")
                )
            }
        }
        Op::Contains(x) => {
            let element = compare("e.value", "=", x, params);
            let array = format!(
                "(jsonb_typeof({v}) = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements({v}) AS e(value) WHERE {element}))"
            );
            match x {
                Scalar::Str(s) => {
                    let p = bind(params, Box::new(s.clone()));
                    format!(
                        "({array} OR (jsonb_typeof({v}) = 'string' AND strpos({v} #>> '{{}}', {p}::text) > 0))"
                    )
                }
                _ => array,
            }
        }
    };
    // A missing path (NULL) fails every operator but `$exists: false`.
    format!("COALESCE({condition}, false)")
}
