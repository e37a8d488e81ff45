//! What each layer does on this machine, or why it is missing and what to do.

use std::path::PathBuf;

use super::Layer;
use super::sandbox::{LayerReport, Namespaces, Sandbox, SandboxOptions};

impl Sandbox {
    pub(crate) fn describe_layers(
        &self,
        options: &SandboxOptions,
        helper: &Result<PathBuf, String>,
        native: &Option<Result<(), String>>,
        bwrap: &Option<(PathBuf, Result<(), String>)>,
        seccomp_ok: bool,
    ) -> Vec<LayerReport> {
        let mut layers = Vec::new();
        layers.push(LayerReport {
            name: "hygiene".into(),
            active: true,
            detail: "fresh working directory per run, environment cleared to an allowlist, stdin from /dev/null, own session and process group killed as a group, output kept as head and tail, disk use of the working directory watched".into(),
            advice: None,
        });
        let nproc_holds = self.process_limit_holds();
        layers.push(LayerReport {
            name: "rlimits".into(),
            active: true,
            detail: if nproc_holds && !self.is_root && !self.has_namespaces() {
                "CPU time, address space, file size, open files, no core dumps; the process count is your user's processes when a run starts plus the run's share (without a user namespace the kernel counts every process of your user)".into()
            } else if nproc_holds {
                "CPU time, address space, file size, open files, process count, no core dumps".into()
            } else {
                "CPU time, address space, file size, open files, no core dumps; the process count does NOT hold (running as root without a uid to drop to)".into()
            },
            advice: (!nproc_holds).then(|| "install bubblewrap so the process limit holds".into()),
        });
        let helper_missing = helper
            .as_ref()
            .err()
            .map(|e| format!("the sandbox helper is not available ({e})"));
        let uid_layer = if !self.is_root {
            LayerReport {
                name: "uid".into(),
                active: true,
                detail: "runs as the unprivileged user that runs codeloop".into(),
                advice: None,
            }
        } else if self.drop_uid {
            LayerReport {
                name: "uid".into(),
                active: true,
                detail: "codeloop runs as root: each run drops to its own unprivileged uid, with no capabilities".into(),
                advice: None,
            }
        } else {
            LayerReport {
                name: "uid".into(),
                active: false,
                detail: helper_missing.clone().unwrap_or_else(|| {
                    "codeloop runs as root and the interpreter is not readable by other users, so runs stay root".into()
                }),
                advice: Some("install bubblewrap (the interpreter is then mounted where an unprivileged uid reaches it), or set CODELOOP_PYTHON to a system interpreter such as /usr/bin/python3".into()),
            }
        };
        layers.push(uid_layer);
        layers.push(if self.use_landlock {
            let mut what = vec![
                "filesystem read-only outside the working directory and the interpreter's paths",
            ];
            if self.landlock_abi >= 4 {
                what.push("no TCP bind or connect");
            }
            if self.landlock_abi >= 6 {
                what.push("signals and abstract Unix sockets scoped to the run");
            }
            LayerReport {
                name: "landlock".into(),
                active: true,
                detail: format!("ABI {}: {}", self.landlock_abi, what.join("; ")),
                advice: (self.landlock_abi < 6)
                    .then(|| "a kernel of 6.12 or later adds TCP and signal scoping".into()),
            }
        } else {
            LayerReport {
                name: "landlock".into(),
                active: false,
                detail: if !options.wants(Layer::Landlock) {
                    "turned off".into()
                } else if let Some(h) = &helper_missing {
                    h.clone()
                } else {
                    "the kernel does not offer Landlock".into()
                },
                advice: Some(if helper_missing.is_some() {
                    "run the codeloop binary itself (it re-executes itself as the helper)".into()
                } else {
                    "use a kernel of 5.13 or later with Landlock enabled (lsm=landlock,...)".into()
                }),
            }
        });
        layers.push(if self.use_seccomp {
            LayerReport {
                name: "seccomp".into(),
                active: true,
                detail: format!(
                    "no non-Unix sockets, no ptrace, no namespace or mount calls, no TIOCSTI, no bpf, io_uring, keyrings or modules{}",
                    if !self.has_namespaces() {
                        "; no setsid or setpgid, so every process stays in the run's group (no pid namespace here)"
                    } else {
                        ""
                    }
                ),
                advice: None,
            }
        } else {
            LayerReport {
                name: "seccomp".into(),
                active: false,
                detail: if !options.wants(Layer::Seccomp) {
                    "turned off".into()
                } else if let Some(h) = &helper_missing {
                    h.clone()
                } else if !seccomp_ok {
                    "the kernel does not offer seccomp filters".into()
                } else {
                    "not available".into()
                },
                advice: Some("use a kernel built with CONFIG_SECCOMP_FILTER on x86_64 or aarch64".into()),
            }
        });
        let what = format!(
            "{}mount, pid, net, ipc and uts namespaces; only system directories, the interpreter and the working directory are visible; /dev has null, zero, full, random and urandom only; no network; the working directory, /tmp and /dev/shm share one tmpfs of the disk quota's size; nothing outlives the run",
            if self.is_root { "" } else { "user, " }
        );
        let native_problem = match native {
            Some(Err(why)) => Some(format!("the helper's own namespaces fail here ({why})")),
            Some(Ok(())) | None => None,
        };
        layers.push(match (&self.namespaces, bwrap) {
            (Namespaces::Native, _) => LayerReport {
                name: "namespaces".into(),
                active: true,
                detail: format!("built in: {what}"),
                advice: None,
            },
            (Namespaces::Bwrap(_), _) => LayerReport {
                name: "namespaces".into(),
                active: true,
                detail: format!(
                    "bubblewrap{}: {what}",
                    native_problem.map(|p| format!(" ({p})")).unwrap_or_default()
                ),
                advice: None,
            },
            (Namespaces::Missing, Some((path, Err(why)))) => LayerReport {
                name: "namespaces".into(),
                active: false,
                detail: format!(
                    "{}{} fails here too: {why}",
                    native_problem.map(|p| format!("{p}; ")).unwrap_or_default(),
                    path.display()
                ),
                advice: Some("allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces; on Ubuntu 24.04 kernel.apparmor_restrict_unprivileged_userns=0, or install bubblewrap, whose AppArmor profile allows them)".into()),
            },
            (Namespaces::Missing, _) => LayerReport {
                name: "namespaces".into(),
                active: false,
                detail: if !options.wants(Layer::Namespaces) {
                    "turned off".into()
                } else if let Some(p) = native_problem {
                    format!("{p}, and bubblewrap (bwrap) is not installed")
                } else if let Some(h) = &helper_missing {
                    format!("{h}, and bubblewrap (bwrap) is not installed")
                } else {
                    "bubblewrap (bwrap) is not installed".into()
                },
                advice: Some("allow unprivileged user namespaces, or install bubblewrap: apt-get install bubblewrap (or dnf/pacman install bubblewrap)".into()),
            },
        });
        layers
    }
}
