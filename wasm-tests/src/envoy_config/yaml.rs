//! A YAML value tree whose maps keep their order, and its block-YAML text.

use std::fmt::Write as _;

/// A YAML value; maps keep their order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Yaml {
    Map(Vec<(String, Yaml)>),
    List(Vec<Yaml>),
    Str(String),
    Int(u64),
    Bool(bool),
}

impl Yaml {
    /// A map from `(key, value)` pairs, in order.
    pub fn map<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Yaml)>) -> Yaml {
        Yaml::Map(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// `{}`.
    pub fn empty() -> Yaml {
        Yaml::Map(Vec::new())
    }

    /// A list.
    pub fn list(items: impl IntoIterator<Item = Yaml>) -> Yaml {
        Yaml::List(items.into_iter().collect())
    }

    /// Adds `key: value` to a map (nothing on any other value).
    pub fn with(mut self, key: &str, value: impl Into<Yaml>) -> Yaml {
        if let Yaml::Map(pairs) = &mut self {
            pairs.push((key.to_owned(), value.into()));
        }
        self
    }

    /// The value of `key` in a map.
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A JSON value as YAML (numbers that are not unsigned integers become strings).
    pub fn from_json(value: &serde_json::Value) -> Yaml {
        use serde_json::Value;
        match value {
            Value::Null => Yaml::empty(),
            Value::Bool(b) => Yaml::Bool(*b),
            Value::Number(n) => n
                .as_u64()
                .map_or_else(|| Yaml::Str(n.to_string()), Yaml::Int),
            Value::String(s) => Yaml::Str(s.clone()),
            Value::Array(a) => Yaml::list(a.iter().map(Yaml::from_json)),
            Value::Object(o) => Yaml::map(o.iter().map(|(k, v)| (k.clone(), Yaml::from_json(v)))),
        }
    }

    /// The value as a block YAML document.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        match self {
            Yaml::Map(_) | Yaml::List(_) => self.write_block(&mut out, 0),
            scalar => {
                let _ = writeln!(out, "{}", scalar.inline());
            }
        }
        out
    }

    /// A scalar, or an empty map or list, on one line.
    fn inline(&self) -> String {
        match self {
            Yaml::Str(s) => quoted(s),
            Yaml::Int(n) => n.to_string(),
            Yaml::Bool(b) => b.to_string(),
            Yaml::Map(_) => "{}".to_owned(),
            Yaml::List(_) => "[]".to_owned(),
        }
    }

    fn is_block(&self) -> bool {
        match self {
            Yaml::Map(m) => !m.is_empty(),
            Yaml::List(l) => !l.is_empty(),
            _ => false,
        }
    }

    /// A non-empty map or list at `indent` spaces.
    fn write_block(&self, out: &mut String, indent: usize) {
        let pad = " ".repeat(indent);
        match self {
            Yaml::Map(pairs) => {
                for (k, v) in pairs {
                    write_entry(out, &pad, k, v, indent);
                }
            }
            Yaml::List(items) => {
                for item in items {
                    match item {
                        Yaml::Map(pairs) if !pairs.is_empty() => {
                            // The first entry on the dash's line, the others under it.
                            for (i, (k, v)) in pairs.iter().enumerate() {
                                let lead = if i == 0 {
                                    format!("{pad}- ")
                                } else {
                                    format!("{pad}  ")
                                };
                                write_entry(out, &lead, k, v, indent + 2);
                            }
                        }
                        Yaml::List(_) if item.is_block() => {
                            let _ = writeln!(out, "{pad}-");
                            item.write_block(out, indent + 2);
                        }
                        scalar => {
                            let _ = writeln!(out, "{pad}- {}", scalar.inline());
                        }
                    }
                }
            }
            scalar => {
                let _ = writeln!(out, "{pad}{}", scalar.inline());
            }
        }
    }
}

/// `key: value` after `lead`; a block value under it at `indent + 2`.
fn write_entry(out: &mut String, lead: &str, key: &str, value: &Yaml, indent: usize) {
    if value.is_block() {
        let _ = writeln!(out, "{lead}{}:", key_text(key));
        value.write_block(out, indent + 2);
    } else {
        let _ = writeln!(out, "{lead}{}: {}", key_text(key), value.inline());
    }
}

/// A key plain when YAML reads it back as the same string (an identifier that is not a YAML
/// 1.1 boolean or null), else quoted.
fn key_text(key: &str) -> String {
    let identifier = key.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    let reserved = ["y", "n", "yes", "no", "true", "false", "on", "off", "null"]
        .contains(&key.to_ascii_lowercase().as_str());
    if identifier && !reserved {
        key.to_owned()
    } else {
        quoted(key)
    }
}

/// A YAML string: single-quoted (`'` doubled) when printable, else JSON's double-quoted form
/// (a YAML double-quoted scalar), since a single-quoted scalar folds line breaks.
pub fn quoted(s: &str) -> String {
    if s.chars().any(char::is_control) {
        serde_json::to_string(s).unwrap_or_default()
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

impl From<&str> for Yaml {
    fn from(s: &str) -> Yaml {
        Yaml::Str(s.to_owned())
    }
}

impl From<String> for Yaml {
    fn from(s: String) -> Yaml {
        Yaml::Str(s)
    }
}

impl From<&String> for Yaml {
    fn from(s: &String) -> Yaml {
        Yaml::Str(s.clone())
    }
}

impl From<u64> for Yaml {
    fn from(n: u64) -> Yaml {
        Yaml::Int(n)
    }
}

impl From<u32> for Yaml {
    fn from(n: u32) -> Yaml {
        Yaml::Int(u64::from(n))
    }
}

impl From<u16> for Yaml {
    fn from(n: u16) -> Yaml {
        Yaml::Int(u64::from(n))
    }
}

impl From<bool> for Yaml {
    fn from(b: bool) -> Yaml {
        Yaml::Bool(b)
    }
}

impl From<Vec<Yaml>> for Yaml {
    fn from(items: Vec<Yaml>) -> Yaml {
        Yaml::List(items)
    }
}
