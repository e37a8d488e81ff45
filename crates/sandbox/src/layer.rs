//! The sandbox's layers by name: what `--without`, CODELOOP_SANDBOX_WITHOUT,
//! the reports and a run's outcome call them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One isolation layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Hygiene,
    Rlimits,
    Uid,
    Landlock,
    Seccomp,
    Namespaces,
}

impl Layer {
    /// Every layer, in the order reports list them.
    pub const ALL: [Layer; 6] = [
        Layer::Hygiene,
        Layer::Rlimits,
        Layer::Uid,
        Layer::Landlock,
        Layer::Seccomp,
        Layer::Namespaces,
    ];

    /// Its short name.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Hygiene => "hygiene",
            Layer::Rlimits => "rlimits",
            Layer::Uid => "uid",
            Layer::Landlock => "landlock",
            Layer::Seccomp => "seccomp",
            Layer::Namespaces => "namespaces",
        }
    }

    /// The layers that may be left out (`--without`): to see what the
    /// others contain alone, or what each costs.
    pub const OPTIONAL: [Layer; 3] = [Layer::Namespaces, Layer::Landlock, Layer::Seccomp];

    /// Whether it may be left out.
    pub fn can_be_left_out(self) -> bool {
        Layer::OPTIONAL.contains(&self)
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A layer named to be left out: one of those `can_be_left_out` allows.
impl FromStr for Layer {
    type Err = String;

    fn from_str(s: &str) -> Result<Layer, String> {
        match Layer::ALL.into_iter().find(|l| l.name() == s.trim()) {
            Some(layer) if layer.can_be_left_out() => Ok(layer),
            _ => Err(format!(
                "{s}: only namespaces, landlock and seccomp can be left out"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_are_named_one_way() {
        for layer in Layer::ALL {
            assert_eq!(
                serde_json::to_string(&layer).unwrap(),
                format!("\"{layer}\"")
            );
        }
        assert_eq!("landlock".parse::<Layer>(), Ok(Layer::Landlock));
        for layer in Layer::OPTIONAL {
            assert_eq!(layer.name().parse::<Layer>(), Ok(layer));
        }
        assert_eq!(
            "uid".parse::<Layer>(),
            Err("uid: only namespaces, landlock and seccomp can be left out".into())
        );
    }
}
