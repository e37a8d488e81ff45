//! The prompt templates: shipped in prompts/ (embedded in the binary), each
//! replaceable by a file of the same name in the user's override folder.

use std::path::{Path, PathBuf};

use minijinja::Environment;
use serde::Serialize;
use sha2::{Digest, Sha256};

/// Every template the engine renders, with its shipped text.
const SHIPPED: &[(&str, &str)] = &[
    ("system.md", include_str!("../../../prompts/system.md")),
    // The openings the others include: the task, then a node's context.
    ("task.md", include_str!("../../../prompts/task.md")),
    ("node.md", include_str!("../../../prompts/node.md")),
    ("plan.md", include_str!("../../../prompts/plan.md")),
    ("tests.md", include_str!("../../../prompts/tests.md")),
    ("cases.md", include_str!("../../../prompts/cases.md")),
    ("code.md", include_str!("../../../prompts/code.md")),
    // The code call that goes on from the conversation that wrote the tests.
    (
        "code_next.md",
        include_str!("../../../prompts/code_next.md"),
    ),
    ("repair.md", include_str!("../../../prompts/repair.md")),
    ("fresh.md", include_str!("../../../prompts/fresh.md")),
    ("review.md", include_str!("../../../prompts/review.md")),
    ("inputs.md", include_str!("../../../prompts/inputs.md")),
];

/// All the input files' descriptions in one prompt, at most (characters);
/// past it a file is given by its one-line summary.
const INPUTS_CHARS: usize = 6000;

/// An input file as the templates see it: `description` is its bounded
/// description (`InputDescription::render`); `preview` (the first lines)
/// stays for templates written before descriptions.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PromptInput {
    pub(crate) name: String,
    pub(crate) size_bytes: u64,
    pub(crate) preview: String,
    pub(crate) description: String,
}

/// The inputs of a session as the prompts give them, bounded in all.
pub(crate) fn prompt_inputs(files: &[codeloop_session::InputFile]) -> Vec<PromptInput> {
    let short: Vec<String> = files
        .iter()
        .map(|f| {
            format!(
                "{}: {} (described in full in the report; the prompt's room for files is used)",
                f.name,
                f.summary()
            )
        })
        .collect();
    // Every file has at least its summary; a file's full description
    // takes its summary's place while all of them fit.
    let mut used: usize = short.iter().map(|s| s.chars().count()).sum();
    files
        .iter()
        .zip(short)
        .map(|(f, short)| {
            let full = f.described();
            let (full_n, short_n) = (full.chars().count(), short.chars().count());
            let description = if used - short_n + full_n <= INPUTS_CHARS {
                used = used - short_n + full_n;
                full
            } else {
                short
            };
            PromptInput {
                name: f.name.clone(),
                size_bytes: f.size_bytes,
                preview: f.preview.clone(),
                description,
            }
        })
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("cannot read the prompt override {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the prompt template {name}{origin} is not valid: {message}. Fix it or delete it to use the shipped one."
    )]
    Template {
        name: String,
        origin: String,
        message: String,
    },
}

/// The loaded templates.
pub(crate) struct Prompts {
    env: Environment<'static>,
    /// (name, where it came from) for messages.
    origins: Vec<(String, String)>,
    /// A hash of every template's text: part of the cache key.
    digest: String,
}

impl Prompts {
    /// The shipped templates, with any file of the same name in `overrides` instead.
    pub(crate) fn load(overrides: Option<&Path>) -> Result<Prompts, PromptError> {
        let mut env = Environment::new();
        env.set_keep_trailing_newline(true);
        let mut origins = Vec::new();
        let mut hasher = Sha256::new();
        for (name, shipped) in SHIPPED {
            let (text, origin) = match overrides.map(|d| d.join(name)) {
                Some(path) if path.is_file() => {
                    let text =
                        std::fs::read_to_string(&path).map_err(|source| PromptError::Read {
                            path: path.clone(),
                            source,
                        })?;
                    (text, format!(" (from {})", path.display()))
                }
                _ => (shipped.to_string(), String::new()),
            };
            hasher.update(name.as_bytes());
            hasher.update(text.as_bytes());
            env.add_template_owned(name.to_string(), text)
                .map_err(|e| PromptError::Template {
                    name: name.to_string(),
                    origin: origin.clone(),
                    message: e.to_string(),
                })?;
            origins.push((name.to_string(), origin));
        }
        Ok(Prompts {
            env,
            origins,
            digest: hex::encode(hasher.finalize()),
        })
    }

    pub(crate) fn render(&self, name: &str, ctx: impl Serialize) -> Result<String, PromptError> {
        let origin = self
            .origins
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, o)| o.clone())
            .unwrap_or_default();
        let err = |e: minijinja::Error| PromptError::Template {
            name: name.to_string(),
            origin: origin.clone(),
            message: e.to_string(),
        };
        let tmpl = self.env.get_template(name).map_err(err)?;
        tmpl.render(ctx).map_err(err)
    }

    /// The third-party packages the program can import, as every prompt's
    /// opening (`task.md`) names them: `packages`, a bounded list, empty
    /// where there are none or they are not known.
    pub(crate) fn set_python(
        &mut self,
        python: Option<&codeloop_protocol::python::PythonEnvironment>,
    ) {
        let list = python.map(|p| p.prompt_list()).unwrap_or_default();
        self.env.add_global("packages", list);
    }

    pub(crate) fn digest(&self) -> &str {
        &self.digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inputs_in_a_prompt_are_bounded_all_together() {
        let dir = tempfile::tempdir().unwrap();
        let header: Vec<String> = (0..80).map(|i| format!("column_{i}")).collect();
        let csv = format!("{}\n{}\n", header.join(","), vec!["1"; 80].join(","));
        let files: Vec<codeloop_session::InputFile> = (0..8)
            .map(|i| {
                let p = dir.path().join(format!("t{i}.csv"));
                std::fs::write(&p, &csv).unwrap();
                // The library the describing child runs, here in-process.
                crate::inputs::input_file(&p, codeloop_inputs::describe(&p).unwrap()).unwrap()
            })
            .collect();
        let shown = prompt_inputs(&files);
        let total: usize = shown.iter().map(|f| f.description.chars().count()).sum();
        assert!(total <= INPUTS_CHARS, "{total}");
        assert!(
            shown[0].description.contains("- column_0: int"),
            "{}",
            shown[0].description
        );
        assert!(
            shown[7].description.contains(
                "t7.csv: CSV (comma), 80 columns, 1 row (described in full in the report"
            ),
            "{}",
            shown[7].description
        );
    }

    #[test]
    fn shipped_templates_render_and_an_override_replaces_one() {
        let p = Prompts::load(None).unwrap();
        let text = p
            .render(
                "plan.md",
                minijinja::context! { task => "sum a list", inputs => Vec::<()>::new() },
            )
            .unwrap();
        assert!(text.contains("sum a list"), "{text}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("plan.md"), "PLAN {{ task }}").unwrap();
        let p2 = Prompts::load(Some(dir.path())).unwrap();
        assert_eq!(
            p2.render("plan.md", minijinja::context! { task => "x" })
                .unwrap(),
            "PLAN x"
        );
        assert_ne!(p.digest(), p2.digest());
        std::fs::write(dir.path().join("code.md"), "{% if %}").unwrap();
        let err = Prompts::load(Some(dir.path())).err().unwrap().to_string();
        assert!(
            err.contains("code.md") && err.contains("delete it"),
            "{err}"
        );
    }
}
