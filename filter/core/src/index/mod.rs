//! The search index of a catalog: words from names and descriptions (tokenizer, stemmer), BM25
//! over them, and the catalog of tool definitions it is built from.

pub(crate) mod bm25;
pub(crate) mod bytes;
pub mod catalog;
pub mod fnv;
pub mod snapshot;
pub(crate) mod stem;
pub mod tokenizer;
