//! The search index of a catalog: words from names and descriptions (tokenizer, stemmer), BM25
//! over them, and the catalog of tool definitions it is built from.

pub(crate) mod bm25;
pub mod catalog;
pub mod fnv;
pub(crate) mod stem;
pub mod tokenizer;
