//! The sandbox's layers, one file each, all registered in `layers!` below.
//!
//! A new layer is `layers/NAME.rs` with a unit struct implementing
//! [`LayerImpl`], plus its `mod` line and one line in `layers!`.
//!
//! A layer is one implementation of [`LayerImpl`]: it is probed once, with
//! the options, when `Sandbox::probe` runs (`probe`: what this machine
//! gives, found without side effects); it says what it does or why it is
//! missing (`report`); for each run it adds its step to the helper's plan
//! (`plan`, data that crosses into the helper as JSON); the helper applies
//! the steps in the child before Python is exec'd (`apply`, stage by stage:
//! see [`Stage`]); and `codeloop doctor` runs its hostile programs against
//! it (`doctor`).
//!
//! The registry's order is the order of the reports (and of a run's
//! `layers`), of the probes, and of the steps within a stage.

// The registered layers (`layers!`), declared here where rustfmt sees them.
pub(crate) mod hygiene;
pub(crate) mod landlock;
pub(crate) mod namespaces;
pub(crate) mod rlimits;
pub(crate) mod seccomp;
pub(crate) mod uid;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::probes::ProbeResult;
use super::{Limits, Sandbox, SandboxOptions};

/// One isolation layer of the sandbox: an implementation of `LayerImpl` in
/// a file of its own, registered once in `layers!`.
pub(crate) trait LayerImpl: Sync {
    /// Whether a person may leave it out (`--without`,
    /// CODELOOP_SANDBOX_WITHOUT), to see what the others contain alone.
    fn can_be_left_out(&self) -> bool {
        false
    }

    /// Find out whether this machine gives the layer: `Ok`, or why not.
    /// `sandbox` holds what the layers before it found; a probe may try
    /// something harmless (a helper run) but changes nothing. It is not
    /// called for a layer left out.
    fn probe(&self, sandbox: &mut Sandbox, options: &SandboxOptions) -> Result<(), String>;

    /// What it does here, or why it is missing and what to do, once every
    /// layer is probed (`Sandbox::probed` has each one's result).
    fn report(&self, sandbox: &Sandbox) -> LayerReport;

    /// When the helper applies its step.
    fn stage(&self) -> Stage;

    /// Its step for one run: the data its `apply` takes, as JSON; `None`
    /// when it has nothing to do in the helper.
    fn plan(&self, sandbox: &Sandbox, run: &RunPlan) -> Option<serde_json::Value>;

    /// In the helper, before Python is exec'd: apply the step `plan` made.
    fn apply(&self, step: &serde_json::Value, child: &mut Child) -> Result<(), String>;

    /// The hostile programs `codeloop doctor` runs against it, with what
    /// each showed.
    fn doctor<'a>(&'a self, _sandbox: &'a Sandbox) -> BoxFuture<'a, Vec<ProbeResult>> {
        Box::pin(async { Vec::new() })
    }
}

/// When the helper applies a layer's step; within a stage, in the
/// registry's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// First, in the process codeloop started: descriptors, namespaces (a
    /// layer may fork here and return in the process to become the
    /// program). Then the helper reports the program's status where no
    /// layer took the status pipe, and enters the working directory.
    Enter,
    /// Limits of the process: rlimits, then the uid. Then the helper sets
    /// its death signal and no_new_privs.
    Limit,
    /// Last: what confines the program's own calls (Landlock, seccomp).
    /// Then the helper execs Python.
    Confine,
}

/// What a layer's `plan` knows of the run.
pub(crate) struct RunPlan<'a> {
    /// The run's working directory on the host.
    pub root: &'a Path,
    pub limits: &'a Limits,
    /// The uid the run drops to (root only).
    pub run_uid: Option<u32>,
    /// Files copied back after the run.
    pub collect: &'a [String],
    /// Image files copied back too.
    pub collect_images: bool,
}

/// The helper's process as the steps go: where the run works, and the
/// status pipe until a layer takes it (the namespaces' init reports on it).
pub(crate) struct Child {
    pub workdir: PathBuf,
    pub status_fd: Option<i32>,
}

/// One isolation layer as probed on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerReport {
    /// Short name: "hygiene", "rlimits", "uid", "landlock", "seccomp", "namespaces".
    pub name: String,
    pub active: bool,
    /// What the layer does here, or why it is not active.
    pub detail: String,
    /// What to do to get it, when it is not active.
    pub advice: Option<String>,
}

/// The registry: one line per layer, `Variant in module;`. The module is
/// `layers/module.rs` (or `layers/module/mod.rs`), its `LayerImpl` the unit
/// struct `module::Variant`, and its name the module's (the variant is
/// that name in CamelCase), declared above it where rustfmt sees it. It
/// makes the `Layer` enum, its names and its implementations.
macro_rules! layers {
    ($($(#[$doc:meta])* $variant:ident in $module:ident;)+) => {
        /// One isolation layer (see `layers/`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Layer {
            $($(#[$doc])* $variant,)+
        }

        impl Layer {
            /// Every layer, in the registry's order.
            pub const ALL: &'static [Layer] = &[$(Layer::$variant),+];

            /// Its short name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Layer::$variant => stringify!($module),)+
                }
            }

            pub(crate) fn imp(self) -> &'static dyn LayerImpl {
                match self {
                    $(Layer::$variant => &$module::$variant,)+
                }
            }
        }
    };
}

layers! {
    /// A fresh working directory, a cleared environment, the process group
    /// killed as a whole, output and disk watched.
    Hygiene in hygiene;
    /// CPU, memory, file size, open files, processes.
    Rlimits in rlimits;
    /// An unprivileged uid of the run's own when codeloop is root.
    Uid in uid;
    /// Files read-only outside the working directory; TCP, signals.
    Landlock in landlock;
    /// System calls a program never needs.
    Seccomp in seccomp;
    /// Mount, pid, net, ipc, uts (and user) namespaces: a root of its own.
    Namespaces in namespaces;
}

impl Layer {
    /// Whether it may be left out: to see what the others contain alone, or
    /// what it costs.
    pub fn can_be_left_out(self) -> bool {
        self.imp().can_be_left_out()
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
        match Layer::ALL.iter().find(|l| l.name() == s.trim()) {
            Some(layer) if layer.can_be_left_out() => Ok(*layer),
            _ => {
                let names: Vec<&str> = Layer::ALL
                    .iter()
                    .filter(|l| l.can_be_left_out())
                    .map(|l| l.name())
                    .collect();
                let listed = match names.split_last() {
                    Some((last, rest)) if !rest.is_empty() => {
                        format!("{} and {last}", rest.join(", "))
                    }
                    _ => names.join(""),
                };
                Err(format!("{s}: only {listed} can be left out"))
            }
        }
    }
}

impl Sandbox {
    /// Probe every layer in the registry's order (those left out are
    /// recorded so), then write their reports.
    pub(crate) fn probe_layers(&mut self, options: &SandboxOptions) {
        self.probed.clear();
        for &layer in Layer::ALL {
            let found = if options.wants(layer) {
                layer.imp().probe(self, options)
            } else {
                Err("turned off".into())
            };
            self.probed.push((layer, found));
        }
        self.layers = Layer::ALL
            .iter()
            .map(|layer| LayerReport {
                name: layer.name().into(),
                ..layer.imp().report(self)
            })
            .collect();
    }

    /// What the probe of `layer` found: `Ok`, or why it is not given here.
    pub(crate) fn probed(&self, layer: Layer) -> Result<(), &str> {
        match self.probed.iter().find(|(l, _)| *l == layer) {
            Some((_, Ok(()))) => Ok(()),
            Some((_, Err(why))) => Err(why),
            None => Err("not probed"),
        }
    }

    /// Whether `layer` was found and is used.
    pub(crate) fn uses(&self, layer: Layer) -> bool {
        self.probed(layer).is_ok()
    }

    /// Each layer's step for one run, in the registry's order.
    pub(crate) fn layer_steps(&self, run: &RunPlan) -> Vec<(Layer, serde_json::Value)> {
        Layer::ALL
            .iter()
            .filter_map(|&layer| layer.imp().plan(self, run).map(|step| (layer, step)))
            .collect()
    }
}

/// In the helper: apply the steps of `stage`, in the registry's order.
pub(crate) fn apply(
    stage: Stage,
    steps: &[(Layer, serde_json::Value)],
    child: &mut Child,
) -> Result<(), String> {
    for &layer in Layer::ALL {
        let imp = layer.imp();
        if imp.stage() != stage {
            continue;
        }
        for (_, step) in steps.iter().filter(|(l, _)| *l == layer) {
            imp.apply(step, child)?;
        }
    }
    Ok(())
}

/// Every layer's hostile programs, in the registry's order.
pub(crate) async fn doctor(sandbox: &Sandbox) -> Vec<ProbeResult> {
    let mut results = Vec::new();
    for &layer in Layer::ALL {
        results.extend(layer.imp().doctor(sandbox).await);
    }
    results
}

/// A step's data as JSON (a plain struct always encodes).
pub(crate) fn step<T: Serialize>(data: &T) -> Option<serde_json::Value> {
    serde_json::to_value(data).ok()
}

/// A step's data back in the helper.
pub(crate) fn read_step<T: serde::de::DeserializeOwned>(
    layer: Layer,
    step: &serde_json::Value,
) -> Result<T, String> {
    T::deserialize(step).map_err(|e| format!("the {layer} step of the plan is not valid: {e}"))
}

/// What a layer needs when it is missing because the helper is.
pub(crate) fn helper_missing(sandbox: &Sandbox) -> Option<String> {
    sandbox
        .helper_problem
        .as_ref()
        .map(|e| format!("the sandbox helper is not available ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_are_named_one_way() {
        for layer in Layer::ALL {
            assert_eq!(
                serde_json::to_string(layer).unwrap(),
                format!("\"{layer}\"")
            );
        }
        assert_eq!("landlock".parse::<Layer>(), Ok(Layer::Landlock));
        for &layer in Layer::ALL {
            assert_eq!(
                layer.name().parse::<Layer>().is_ok(),
                layer.can_be_left_out()
            );
        }
        assert_eq!(
            "uid".parse::<Layer>(),
            Err("uid: only landlock, seccomp and namespaces can be left out".into())
        );
    }
}
