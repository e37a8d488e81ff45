//! The Python a session's programs run with: the interpreter, its version
//! and the third-party packages it can import. The sandbox probes it (on
//! the host, once, before the first run); the session keeps it on the tape
//! (`SessionStarted`'s config); the prompts and `doctor` say it.

use serde::{Deserialize, Serialize};

/// Third-party packages named at most, in a prompt.
pub(crate) const PROMPT_PACKAGES: usize = 40;

/// Packages a data task reaches for, named first in a prompt (the rest
/// follow by name).
const NAMED_FIRST: &[&str] = &[
    "numpy",
    "pandas",
    "matplotlib",
    "scipy",
    "pillow",
    "scikit-learn",
    "seaborn",
    "polars",
    "pyarrow",
    "openpyxl",
    "networkx",
    "sympy",
    "statsmodels",
    "requests",
];

/// One importable distribution of the interpreter's `site-packages`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Package {
    /// Its distribution name ("numpy"), or the module's name where no
    /// distribution owns it (a package copied into site-packages).
    pub name: String,
    /// Empty where no distribution records it.
    #[serde(default)]
    pub(crate) version: String,
    /// The top-level modules it gives (`import` names), where they differ
    /// from the name ("scikit-learn" gives "sklearn").
    #[serde(default)]
    pub modules: Vec<String>,
}

impl Package {
    /// "numpy 2.1.0", "scikit-learn 1.5 (import sklearn)".
    pub fn describe(&self) -> String {
        let mut out = self.name.clone();
        if !self.version.is_empty() {
            out.push(' ');
            out.push_str(&self.version);
        }
        let differs: Vec<&str> = self
            .modules
            .iter()
            .map(String::as_str)
            .filter(|m| !m.eq_ignore_ascii_case(&self.name.replace('-', "_")))
            .collect();
        if !differs.is_empty() {
            out.push_str(&format!(" (import {})", differs.join(", ")));
        }
        out
    }
}

/// The interpreter the sandbox runs and what it has.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PythonEnvironment {
    /// The interpreter as started (a venv's `bin/python`).
    pub interpreter: String,
    /// "3.11.7".
    pub version: String,
    /// `sys.prefix` (the venv), and where it is not the same, `sys.base_prefix`.
    #[serde(default)]
    pub prefix: String,
    #[serde(default)]
    pub base_prefix: String,
    /// The `site-packages` directories bound read-only into every run.
    #[serde(default)]
    pub site_packages: Vec<String>,
    /// Third-party packages (pip and setuptools left out), by name, bounded.
    #[serde(default)]
    pub packages: Vec<Package>,
    /// Packages beyond those listed.
    #[serde(default)]
    pub more: usize,
    /// The person chose this interpreter (`--python`, a profile's or the
    /// config's `interpreter`, `CODELOOP_PYTHON`): only then do the prompts
    /// offer its packages. The default `python3`'s packages are whatever
    /// happens to be installed on the machine; the prompts keep to the
    /// standard library there.
    #[serde(default)]
    pub chosen: bool,
}

impl PythonEnvironment {
    /// The packages for a prompt: at most `PROMPT_PACKAGES`, "and N more".
    /// Empty when there are none.
    pub fn prompt_list(&self) -> String {
        if self.packages.is_empty() {
            return String::new();
        }
        let mut ordered: Vec<&Package> = self.packages.iter().collect();
        ordered.sort_by_key(|p| {
            NAMED_FIRST
                .iter()
                .position(|n| n.eq_ignore_ascii_case(&p.name))
                .unwrap_or(NAMED_FIRST.len())
        });
        let shown: Vec<String> = ordered
            .into_iter()
            .take(PROMPT_PACKAGES)
            .map(Package::describe)
            .collect();
        let more = self.more + self.packages.len().saturating_sub(PROMPT_PACKAGES);
        let mut out = shown.join(", ");
        if more > 0 {
            out.push_str(&format!(", and {more} more"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg(name: &str, version: &str, modules: &[&str]) -> Package {
        Package {
            name: name.into(),
            version: version.into(),
            modules: modules.iter().map(|m| m.to_string()).collect(),
        }
    }

    #[test]
    fn a_package_says_its_import_name_where_it_differs() {
        assert_eq!(pkg("numpy", "2.1.0", &["numpy"]).describe(), "numpy 2.1.0");
        assert_eq!(
            pkg("scikit-learn", "1.5.0", &["sklearn"]).describe(),
            "scikit-learn 1.5.0 (import sklearn)"
        );
        assert_eq!(pkg("tinypkg", "", &["tinypkg"]).describe(), "tinypkg");
    }

    #[test]
    fn the_prompt_list_is_bounded() {
        let env = PythonEnvironment {
            packages: (0..50).map(|i| pkg(&format!("p{i}"), "1", &[])).collect(),
            more: 3,
            ..PythonEnvironment::default()
        };
        let list = env.prompt_list();
        assert!(list.starts_with("p0 1, p1 1"));
        let data = PythonEnvironment {
            packages: vec![
                pkg("attrs", "1", &[]),
                pkg("pandas", "2", &[]),
                pkg("numpy", "3", &[]),
            ],
            ..PythonEnvironment::default()
        };
        assert_eq!(data.prompt_list(), "numpy 3, pandas 2, attrs 1");
        assert!(list.ends_with(", and 13 more"), "{list}");
        assert_eq!(PythonEnvironment::default().prompt_list(), "");
    }
}
