//! The models that need no server: recorded replies (`--scripted FILE`)
//! and the demo model (a bundled demo's authored replies).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};

use super::{ModelArgs, Selected};
use crate::demos::Demo;
use crate::llm::scripted::{Pacing, ScriptedModel};

/// A model answering from a replies file or a session's tape.
pub(super) fn scripted(path: &Path, args: &ModelArgs) -> anyhow::Result<Selected> {
    let pacing = args
        .pace
        .map_or_else(Pacing::instant, Pacing::chars_per_second);
    let model = ScriptedModel::from_file(path, pacing)?;
    let description = format!(
        "scripted model: {} recorded replies from {}",
        model.remaining(),
        path.display()
    );
    Ok(Selected {
        model: Arc::new(model),
        description,
        demo: None,
        fallback_reason: None,
        probed: Vec::new(),
        named_server: None,
    })
}

/// The demo model answering with a bundled demo's authored replies; `why`
/// it was chosen when nothing else was asked for.
pub(super) fn demo_model(
    demo: &'static Demo,
    args: &ModelArgs,
    why: Option<String>,
) -> anyhow::Result<Selected> {
    let pacing = args
        .pace
        .map_or_else(Pacing::demo, Pacing::chars_per_second);
    let model = ScriptedModel::demo(demo.name, demo.replies, pacing)
        .with_context(|| format!("the bundled demo \"{}\" is damaged", demo.name))?;
    let mut description = format!(
        "demo model: authored replies, offline (demo \"{}\": {})",
        demo.name, demo.title
    );
    if let Some(why) = &why {
        description.push_str(&format!("; {why}"));
    }
    Ok(Selected {
        model: Arc::new(model),
        description,
        demo: Some(demo),
        fallback_reason: why,
        probed: Vec::new(),
        named_server: None,
    })
}

/// The bundled demo `--demo NAME` names.
pub(super) fn find_demo(bundled: &'static [Demo], name: &str) -> anyhow::Result<&'static Demo> {
    if let Some(demo) = bundled.iter().find(|d| d.name == name) {
        return Ok(demo);
    }
    if bundled.is_empty() {
        bail!("there is no demo called \"{name}\": this build has no bundled demos");
    }
    let names: Vec<&str> = bundled.iter().map(|d| d.name).collect();
    bail!(
        "there is no demo called \"{name}\"; the bundled demos are: {}",
        names.join(", ")
    )
}

/// The demo model falls back on the first bundled demo.
pub(super) fn default_demo(bundled: &'static [Demo], why: &str) -> anyhow::Result<&'static Demo> {
    match bundled.first() {
        Some(demo) => Ok(demo),
        None => bail!(
            "{why}, and this build has no bundled demo model to fall back on. Start Ollama (`ollama serve`, then `ollama pull qwen2.5-coder:7b`), or pass --base-url URL --model NAME for another OpenAI-compatible server"
        ),
    }
}
