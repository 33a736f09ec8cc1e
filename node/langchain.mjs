// `ratchetdb/langchain` for ES modules: the same classes built over the ES module build of
// @langchain/core, so they extend the `VectorStore` the importing application sees.
import { createRequire } from 'node:module';
import { VectorStore, VectorStoreRetriever } from '@langchain/core/vectorstores';
import { Document } from '@langchain/core/documents';
import { maximalMarginalRelevance } from '@langchain/core/utils/math';
import { Embeddings } from '@langchain/core/embeddings';

const require = createRequire(import.meta.url);
const { build } = require('./langchain_impl.js');

const langchain = build({ VectorStore, VectorStoreRetriever, Document, maximalMarginalRelevance, Embeddings });
export const { RatchetVectorStore, RatchetRetriever, RatchetEmbeddings, index } = langchain;
export default langchain;
