//! Config values checked where they are read: the first setting no run
//! could use, with its key, what it holds and what it takes.

use super::*;

impl Config {
    /// The first setting whose value no run could use, as the flag for it
    /// would refuse it: (its key, its value, what it must be).
    pub(crate) fn invalid_value(&self) -> Option<(&'static str, String, &'static str)> {
        let r = &self.run;
        let checks: [(&'static str, String, bool, &'static str); 10] = [
            (
                "[run] timeout_secs",
                r.timeout_secs.to_string(),
                (1..=MAX_TIMEOUT_SECS).contains(&r.timeout_secs),
                "a run's wall-clock limit must be 1 to 86400 seconds, e.g. 10",
            ),
            (
                "[run] memory_mb",
                r.memory_mb.to_string(),
                r.memory_mb >= 1,
                "a run's memory limit must be a positive number of MiB, e.g. 1024",
            ),
            (
                "[run] workers",
                r.workers.to_string(),
                r.workers >= 1,
                "at least 1 function must be worked on at a time, e.g. 2",
            ),
            (
                "[run] max_iterations",
                r.max_iterations.to_string(),
                r.max_iterations >= 1,
                "a function needs at least 1 code version, e.g. 4",
            ),
            (
                "[run] candidates",
                r.candidates.to_string(),
                (1..=MAX_CANDIDATES).contains(&r.candidates),
                "the candidates of a function's first code are 1 (no vote) to 8, e.g. 3",
            ),
            (
                "[loop] fresh_after",
                self.repair.fresh_after.to_string(),
                self.repair.fresh_after >= 1,
                "a fresh start comes after at least 1 failed version, e.g. 3",
            ),
            (
                "[loop] fresh_asks",
                self.repair.fresh_asks.to_string(),
                self.repair.fresh_asks >= 1,
                "a fresh start asks the model at least once, e.g. 3",
            ),
            (
                "[run] sandbox",
                format!("{:?}", r.sandbox),
                matches!(r.sandbox.as_str(), "full" | "reduced"),
                "the sandbox is \"full\" or \"reduced\"",
            ),
            (
                "[ui] graphics",
                format!("{:?}", self.ui.graphics),
                self.ui
                    .graphics
                    .parse::<crate::tui::graphics::Setting>()
                    .is_ok(),
                "the graphics protocol is \"auto\", \"kitty\", \"sixel\", \"iterm2\" or \"halfblocks\"",
            ),
            (
                "[model] request_timeout_secs",
                self.model.request_timeout_secs.to_string(),
                self.model.request_timeout_secs >= 1,
                "a model request needs at least 1 second, e.g. 120",
            ),
        ];
        if let Some(found) = checks
            .into_iter()
            .find(|(_, _, ok, _)| !ok)
            .map(|(key, value, _, message)| (key, value, message))
        {
            return Some(found);
        }
        self.invalid_import_or_interpreter()
    }

    /// A module name in `[imports]` that is no module name, or an
    /// interpreter setting that is empty.
    fn invalid_import_or_interpreter(&self) -> Option<(&'static str, String, &'static str)> {
        let bad = |list: &[String]| {
            list.iter()
                .find(|m| !codeloop_sandbox::ImportPolicy::valid_module_name(m))
                .map(|m| format!("{m:?}"))
        };
        if let Some(v) = bad(&self.imports.allow) {
            return Some((
                "[imports] allow",
                v,
                "each entry is a module name, e.g. \"os.path\"",
            ));
        }
        if let Some(v) = bad(&self.imports.block) {
            return Some((
                "[imports] block",
                v,
                "each entry is a module name, e.g. \"socket\"",
            ));
        }
        if self
            .run
            .interpreter
            .as_ref()
            .is_some_and(|p| p.as_os_str().is_empty())
        {
            return Some((
                "[run] interpreter",
                "\"\"".into(),
                "the interpreter is a path to a python, e.g. \"/home/me/venv/bin/python\" (or leave it out)",
            ));
        }
        None
    }
}
