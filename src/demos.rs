//! The bundled demo sessions: a task and the authored model replies that the
//! demo model answers with. Embedded in the binary, so demos need nothing on disk.

/// One bundled demo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Demo {
    /// Short name for `--demo NAME`.
    pub name: &'static str,
    /// One line for menus.
    pub title: &'static str,
    /// The task as the user would type it.
    pub task: &'static str,
    /// The scripted replies (JSON Lines, see `llm::scripted`).
    pub replies: &'static str,
    /// A recorded session of this demo (a tape), for `codeloop replay NAME`.
    pub tape: &'static str,
}

/// Every bundled demo, in menu order.
pub fn all() -> &'static [Demo] {
    &[]
}

/// The demo called `name`, if there is one.
pub fn find(name: &str) -> Option<&'static Demo> {
    all().iter().find(|d| d.name == name)
}
