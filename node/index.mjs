// ESM entry: the same classes as the CommonJS entry (one native addon, loaded once).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const ratchetdb = require('./index.js');

export const {
  Store, Ticket, Timestamp, Embedder, HashingEmbedder, MiniLM, ModelNotFoundError, EmbedError, RatchetError, InputError, DimensionMismatchError, VersionKindMismatchError,
  MissingVectorError, StoreOpenError, StoreLockedError, StoreNotFoundError, MismatchError,
  NeedsRecoveryError, CorruptedError, StorageError, PoisonedError, ReadOnlyError, ClosedError,
  UnsupportedError, NoTextIndexError,
} = ratchetdb;
export default ratchetdb;
