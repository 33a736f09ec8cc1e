'use strict';
// `ratchetdb/langchain` for CommonJS: RatchetVectorStore, RatchetRetriever, RatchetEmbeddings and the guarded
// index(), built over the CommonJS build of @langchain/core (an optional peer dependency).

let core;
try {
  core = {
    ...require('@langchain/core/vectorstores'),
    ...require('@langchain/core/documents'),
    ...require('@langchain/core/utils/math'),
    ...require('@langchain/core/embeddings'),
  };
} catch (error) {
  if (error && error.code === 'MODULE_NOT_FOUND') {
    throw new Error("ratchetdb/langchain needs @langchain/core: npm install @langchain/core", { cause: error });
  }
  throw error;
}
const { build } = require('./langchain_impl.js');

module.exports = build(core);
