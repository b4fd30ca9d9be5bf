//! Test support for mcp-tool-search: a deterministic tool-catalog generator, and a harness that
//! runs real processes (Envoy, the catalog MCP server) for end-to-end tests.

pub mod catalog;
pub mod envoy_config;
pub mod harness;
pub mod http1;
pub mod jwt;
pub mod large_schemas;
pub mod mcp;
pub mod node;
pub mod python;
