//! Command-line options.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::model::DEFAULT_MODEL_DIR;
use crate::server::Settings;

/// Default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8090";

/// Usage text for `--help` and for errors.
pub const USAGE: &str = "\
usage: mcp-tool-search-embedder [options]

OpenAI-compatible POST /v1/embeddings with all-MiniLM-L6-v2 on the CPU.

  --model-dir DIR       model.safetensors + tokenizer.json [+ config.json]
                        (default .cache/models/all-MiniLM-L6-v2; `make model` fetches it)
  --listen ADDR         host:port to listen on, port 0 picks one (default 127.0.0.1:8090);
                        prints `listening on ADDR` on stdout when ready
  --model-id NAME       model name served and required in requests (default all-MiniLM-L6-v2)
  --max-batch N         most texts per request, more is 413 (default 64)
  --workers N           inference threads (default 1: one batch already uses every core)
  --queue N             requests waiting for a thread, per lane (single texts go ahead of
                        batches); more is 503 + retry-after (default 32)
  --max-body-bytes N    largest request body, more is 413 (default 4194304)
  --cache-entries N     vectors kept, keyed by a hash of (model id, exact text), least
                        recently used evicted first; repeated texts (every replica of a mesh
                        embedding the same catalog) skip the model. 384 f32 = 1.5 KiB each:
                        the default 20000 is about 33 MiB when full; 0 disables the cache
  -h, --help            this text
";

/// Parsed options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the model files are.
    pub model_dir: PathBuf,
    /// Where to listen.
    pub listen: SocketAddr,
    /// Everything else.
    pub settings: Settings,
}

/// What the command line asked for.
#[derive(Debug, Clone)]
pub enum Command {
    /// Serve with these options.
    Serve(Options),
    /// Print the usage and exit.
    Help,
}

/// A command-line mistake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError(pub String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (see --help)", self.0)
    }
}

impl std::error::Error for CliError {}

fn count(flag: &str, value: &str) -> Result<usize, CliError> {
    match value.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(CliError(format!(
            "{flag} needs a whole number above 0, got `{value}`"
        ))),
    }
}

/// Parses the arguments after the program name. Accepts `--flag value` and `--flag=value`.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, CliError> {
    let mut options = Options {
        model_dir: PathBuf::from(DEFAULT_MODEL_DIR),
        listen: DEFAULT_LISTEN
            .parse()
            .map_err(|e| CliError(format!("bad default listen address: {e}")))?,
        settings: Settings::default(),
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(Command::Help);
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_string(), Some(value.to_string()))
            }
            _ => (arg.clone(), None),
        };
        if !matches!(
            flag.as_str(),
            "--model-dir"
                | "--listen"
                | "--model-id"
                | "--max-batch"
                | "--workers"
                | "--queue"
                | "--max-body-bytes"
                | "--cache-entries"
        ) {
            return Err(CliError(format!("unknown argument `{arg}`")));
        }
        let value = match inline {
            Some(v) => v,
            None => args
                .next()
                .ok_or_else(|| CliError(format!("{flag} needs a value")))?,
        };
        match flag.as_str() {
            "--model-dir" => options.model_dir = PathBuf::from(value),
            "--listen" => {
                options.listen = value.parse().map_err(|_| {
                    CliError(format!(
                        "--listen needs host:port with a numeric IP (e.g. 127.0.0.1:8090), got `{value}`"
                    ))
                })?;
            }
            "--model-id" => {
                if value.is_empty() {
                    return Err(CliError("--model-id must not be empty".to_string()));
                }
                options.settings.model_id = value;
            }
            "--max-batch" => options.settings.max_batch = count(&flag, &value)?,
            "--workers" => options.settings.workers = count(&flag, &value)?,
            "--queue" => options.settings.queue = count(&flag, &value)?,
            "--cache-entries" => {
                options.settings.cache_entries = value.parse().map_err(|_| {
                    CliError(format!(
                        "--cache-entries needs a whole number (0 disables the cache), got `{value}`"
                    ))
                })?;
            }
            _ => options.settings.max_body_bytes = count(&flag, &value)?,
        }
    }
    Ok(Command::Serve(options))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve(args: &[&str]) -> Result<Options, CliError> {
        match parse(args.iter().map(|s| s.to_string()))? {
            Command::Serve(o) => Ok(o),
            Command::Help => panic!("help"),
        }
    }

    #[test]
    fn defaults() {
        let o = serve(&[]).unwrap();
        assert_eq!(o.model_dir, PathBuf::from(".cache/models/all-MiniLM-L6-v2"));
        assert_eq!(o.listen.to_string(), "127.0.0.1:8090");
        assert_eq!(o.settings.max_batch, 64);
        assert_eq!(o.settings.model_id, "all-MiniLM-L6-v2");
        assert_eq!(
            o.settings.cache_entries,
            crate::server::DEFAULT_CACHE_ENTRIES
        );
        assert!(
            USAGE.contains(&format!("default {}", crate::server::DEFAULT_CACHE_ENTRIES)),
            "the usage states the default"
        );
    }

    #[test]
    fn flags() {
        let o = serve(&[
            "--model-dir",
            "/m",
            "--listen=127.0.0.1:0",
            "--max-batch",
            "8",
            "--model-id",
            "mini",
            "--workers=2",
            "--queue",
            "4",
            "--cache-entries=0",
        ])
        .unwrap();
        assert_eq!(o.model_dir, PathBuf::from("/m"));
        assert_eq!(o.listen.port(), 0);
        assert_eq!(o.settings.max_batch, 8);
        assert_eq!(o.settings.model_id, "mini");
        assert_eq!(o.settings.workers, 2);
        assert_eq!(o.settings.queue, 4);
        assert_eq!(o.settings.cache_entries, 0, "0 disables the cache");
        assert_eq!(
            serve(&["--cache-entries", "7"])
                .unwrap()
                .settings
                .cache_entries,
            7
        );
        assert!(matches!(
            parse(["--help".to_string()]).unwrap(),
            Command::Help
        ));
    }

    #[test]
    fn mistakes() {
        assert!(serve(&["--max-batch", "0"]).is_err());
        assert!(serve(&["--max-batch", "x"]).is_err());
        assert!(serve(&["--listen", "localhost"]).is_err());
        assert!(serve(&["--listen"]).is_err());
        assert!(serve(&["--bogus", "1"]).is_err());
        assert!(serve(&["--model-id="]).is_err());
        assert!(serve(&["--cache-entries", "-1"]).is_err());
        assert!(serve(&["--cache-entries"]).is_err());
    }
}
