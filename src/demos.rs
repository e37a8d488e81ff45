//! The bundled demo sessions: a task, the authored model replies the demo
//! model answers with, and a recorded session of it for `codeloop replay NAME`.
//! Embedded in the binary, so demos need nothing on disk.
//!
//! The replies are authored fixtures (scripts/author_demos.py writes them);
//! the failures they lead to are real: the code runs in the sandbox and fails
//! its tests for real, is localized, and the repairs pass for real.

use std::path::{Path, PathBuf};

/// One bundled demo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Demo {
    /// Short name for `--demo NAME`.
    pub name: &'static str,
    /// One line for menus.
    pub title: &'static str,
    /// The task as the user would type it.
    pub(crate) task: &'static str,
    /// The scripted replies (JSON Lines, see `llm::scripted`).
    pub(crate) replies: &'static str,
    /// A recorded session of this demo (a tape), for `codeloop replay NAME`.
    pub tape: &'static str,
    /// Input files the demo's task reads (name, contents), attached when
    /// it starts: written to the data folder's `demos/NAME/` first.
    pub(crate) inputs: &'static [(&'static str, &'static str)],
    /// The demo shows the review before running (its replies have one for
    /// each code version).
    pub(crate) review: bool,
}

impl Demo {
    /// The plan its authored replies give (the reply tagged `plan`).
    pub(crate) fn plan(&self) -> Vec<crate::session::FunctionSpec> {
        self.replies
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .find(|reply| reply["tag"] == "plan")
            .and_then(|reply| crate::engine::extract::extract_plan(reply["text"].as_str()?).ok())
            .unwrap_or_default()
    }

    /// The demo's input files on disk, written afresh under `data_dir`
    /// (`demos/NAME/`), to attach to its session.
    pub(crate) fn input_files(&self, data_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        if self.inputs.is_empty() {
            return Ok(Vec::new());
        }
        let dir = data_dir.join("demos").join(self.name);
        self.inputs
            .iter()
            .map(|(name, contents)| {
                let path = crate::session::session_fs::join_name(&dir, name)?;
                crate::session::session_fs::write_inside(
                    &dir,
                    Path::new(name),
                    contents.as_bytes(),
                    crate::session::session_fs::PRIVATE_FILE,
                )?;
                Ok(path)
            })
            .collect()
    }
}

macro_rules! demo {
    ($name:literal) => {
        Demo {
            name: $name,
            title: include_str!(concat!("../assets/demos/", $name, "/title.txt")).trim_ascii_end(),
            task: include_str!(concat!("../assets/demos/", $name, "/task.txt")).trim_ascii_end(),
            replies: include_str!(concat!("../assets/demos/", $name, "/replies.jsonl")),
            tape: include_str!(concat!("../assets/demos/", $name, "/tape.jsonl")),
            inputs: &[],
            review: false,
        }
    };
    ($name:literal, review, inputs: [$($file:literal),*]) => {
        Demo {
            inputs: &[$(($file, include_str!(concat!("../assets/demos/", $name, "/", $file)))),*],
            review: true,
            ..demo!($name)
        }
    };
}

static DEMOS: [Demo; 5] = [
    demo!("wordfreq"),
    demo!("csvmeans"),
    demo!("roman"),
    demo!("collatz"),
    demo!("sales", review, inputs: ["sales.csv"]),
];

/// Every bundled demo, in menu order.
pub fn all() -> &'static [Demo] {
    &DEMOS
}

/// The demo called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Demo> {
    all().iter().find(|d| d.name == name)
}
