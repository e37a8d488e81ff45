//! Namespaces: mount, pid, net, ipc, uts and cgroup namespaces (and a
//! user namespace unless root), built by the helper itself (`enter.rs`) or,
//! where the kernel allows them only to it, by a system bubblewrap
//! (`bwrap_args`): only the system directories, the interpreter and the
//! working directory in view, five devices, no network, one tmpfs of the
//! disk quota's size for the working directory, /tmp and /dev/shm.

pub(crate) mod enter;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use futures_util::future::BoxFuture;

use super::{
    Child, Layer, LayerImpl, LayerReport, RunPlan, Stage, helper_missing, read_step, step,
};
use crate::helper::HELPER_ARG;
use crate::probes::{ProbeResult, marker_probe, run};
use crate::sandbox::{
    CPU_INFO_DIR, PROBE_TIMEOUT, SYSTEM_READ_DIRS, find_on_path, run_with_timeout,
};
use crate::{Sandbox, SandboxOptions};
use enter::NamespacePlan;

pub(crate) struct Namespaces;

/// Who gives the namespace layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NamespaceSource {
    /// The helper unshares and builds the root itself (`enter.rs`).
    Native,
    /// A system bubblewrap (where the kernel allows user namespaces only to
    /// it), and why the helper's own failed.
    Bwrap {
        path: PathBuf,
        native_problem: Option<String>,
    },
    /// Neither; `bwrap_failed`: a bubblewrap was found and failed too.
    Missing { bwrap_failed: bool },
}

const READ_SECRET: &str = r#"import sys
path, secret = sys.argv[1], sys.argv[2]
try:
    text = open(path).read()
    print("ESCAPED read the secret" if secret in text else "CONTAINED: the file read back without the secret")
except OSError as e:
    print(f"CONTAINED: {type(e).__name__}: {e.strerror}")
"#;

impl Sandbox {
    /// True when runs get fresh namespaces (the helper's own or bubblewrap's).
    pub(crate) fn has_namespaces(&self) -> bool {
        match self.namespaces {
            NamespaceSource::Native | NamespaceSource::Bwrap { .. } => true,
            NamespaceSource::Missing { .. } => false,
        }
    }

    /// The bubblewrap that gives the namespaces, if one does.
    pub(crate) fn bwrap(&self) -> Option<&Path> {
        match &self.namespaces {
            NamespaceSource::Bwrap { path, .. } => Some(path),
            _ => None,
        }
    }

    /// Whether the helper's own namespaces work here: a real run of the
    /// interpreter through them (as the run's uid when root).
    fn native_namespaces_work(&self) -> Result<(), String> {
        let Some(helper) = &self.helper else {
            return Err("the sandbox helper is not available".into());
        };
        if self.interpreter.as_os_str().is_empty() {
            return Err("no interpreter to try them with".into());
        }
        let dir = tempfile::Builder::new()
            .prefix("codeloop-probe-")
            .tempdir()
            .map_err(|e| format!("cannot make a directory to try them in: {e}"))?;
        let root = dir.path();
        let run_uid = self.is_root.then(super::uid::next_run_uid);
        if let Some(uid) = run_uid {
            crate::run::chown_tree(root, uid).map_err(|e| e.to_string())?;
        }
        // The sandbox as it would be with them (the run's uid when root).
        let mut probe = self.clone();
        probe.namespaces = NamespaceSource::Native;
        let argv = vec![
            self.interpreter.clone().into_os_string(),
            "-S".into(),
            "-c".into(),
            "pass".into(),
        ];
        let plan = probe.helper_plan(
            root,
            argv,
            &RunPlan {
                root,
                limits: &crate::Limits::default(),
                run_uid,
                collect: &[],
                collect_images: false,
            },
        );
        let json = serde_json::to_string(&plan).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(helper);
        cmd.arg(HELPER_ARG).arg(json).current_dir(root);
        cmd.env_clear().stdin(Stdio::null()).stdout(Stdio::null());
        match run_with_timeout(cmd, PROBE_TIMEOUT) {
            Ok((true, _)) => Ok(()),
            Ok((false, stderr)) => Err(stderr
                .trim()
                .trim_start_matches(crate::helper::HELPER_ERROR_PREFIX)
                .to_string()),
            Err(e) => Err(e),
        }
    }

    fn bwrap_works(&self, bwrap: &Path) -> Result<(), String> {
        let mut cmd = Command::new(bwrap);
        cmd.args(self.bwrap_args(Path::new("/")));
        cmd.arg("--").arg("/bin/true");
        cmd.env_clear().stdin(Stdio::null()).stdout(Stdio::null());
        match run_with_timeout(cmd, PROBE_TIMEOUT) {
            Ok((true, _)) => Ok(()),
            Ok((false, stderr)) => Err(stderr.trim().to_string()),
            Err(e) => Err(e),
        }
    }

    /// bubblewrap's arguments (everything before `--`): fresh namespaces,
    /// the system directories and the interpreter read-only, the working
    /// directory read-write, and a private /tmp and /dev/shm that are its
    /// `.tmp` (the program's TMPDIR): bubblewrap's own tmpfs takes a size
    /// but no inode limit, where this way the working directory's measure
    /// (bytes and files) holds them too.
    pub(crate) fn bwrap_args(&self, workdir: &Path) -> Vec<OsString> {
        let mut args = BwrapArgs::default();
        args.push(&[
            "--die-with-parent",
            "--new-session",
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "sandbox",
        ]);
        if self.is_root {
            // Privileged bubblewrap: no user namespace; the helper drops to an
            // unprivileged uid itself, for which it needs these two (and loses
            // them, with every other capability, when it switches).
            args.push(&["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]);
        } else {
            args.push(&["--unshare-user", "--disable-userns"]);
        }
        args.system_dirs();
        args.private_tmp(workdir);
        let mut extra: Vec<PathBuf> = self.interp.paths.clone();
        if let Some(h) = &self.helper {
            extra.push(h.clone());
        }
        for p in extra {
            args.ro_bind_unless_bound(p);
        }
        if workdir != Path::new("/") {
            args.parents(workdir);
            args.push_os(&["--bind".into(), workdir.into(), workdir.into()]);
            args.push_os(&["--chdir".into(), workdir.into()]);
        }
        args.args
    }
}

/// bubblewrap's arguments as they are made, with the paths bound
/// read-only so far and the directories that exist in the new root.
struct BwrapArgs {
    args: Vec<OsString>,
    bound: Vec<PathBuf>,
    made: Vec<PathBuf>,
}

impl Default for BwrapArgs {
    fn default() -> BwrapArgs {
        BwrapArgs {
            args: Vec::new(),
            bound: Vec::new(),
            made: vec![PathBuf::from("/")],
        }
    }
}

impl BwrapArgs {
    fn push(&mut self, items: &[&str]) {
        self.args.extend(items.iter().map(OsString::from));
    }

    fn push_os(&mut self, items: &[OsString]) {
        self.args.extend(items.iter().cloned());
    }

    /// The system's read-only directories (a symlink among them stays one).
    fn system_dirs(&mut self) {
        for dir in SYSTEM_READ_DIRS {
            let p = Path::new(dir);
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(p) {
                        self.push_os(&["--symlink".into(), target.into_os_string(), p.into()]);
                    }
                }
                Ok(_) => {
                    self.push_os(&["--ro-bind".into(), p.into(), p.into()]);
                    self.bound.push(p.to_path_buf());
                }
                Err(_) => {}
            }
        }
    }

    /// A private /proc and /dev, and /tmp and /dev/shm of the run's own
    /// (its working directory's .tmp, which its uid owns), made first:
    /// what is bound after them (the helper, the interpreter, the working
    /// directory) may live under /tmp and must stay visible on top.
    fn private_tmp(&mut self, workdir: &Path) {
        self.push(&["--proc", "/proc", "--dev", "/dev"]);
        for dir in ["/dev/shm", "/tmp"] {
            if workdir == Path::new("/") {
                // The probe, which has no working directory.
                self.push(&["--tmpfs", dir]);
            } else {
                self.push_os(&["--bind".into(), workdir.join(".tmp").into(), dir.into()]);
            }
        }
        self.made
            .extend(["/tmp", "/dev", "/proc"].map(PathBuf::from));
    }

    /// `p` bound read-only, unless a directory above it already is.
    fn ro_bind_unless_bound(&mut self, p: PathBuf) {
        if self.bound.iter().any(|b| p.starts_with(b)) {
            return;
        }
        self.parents(&p);
        self.push_os(&["--ro-bind".into(), p.clone().into(), p.clone().into()]);
        self.made.push(p.clone());
        self.bound.push(p);
    }

    /// bubblewrap makes missing parents mode 0700, which an unprivileged
    /// uid cannot cross: make them 0755 first.
    fn parents(&mut self, p: &Path) {
        let mut ancestors: Vec<&Path> = p.ancestors().skip(1).collect();
        ancestors.reverse();
        for dir in ancestors {
            if self.made.iter().any(|m| m == dir) {
                continue;
            }
            self.push(&["--perms", "0755", "--dir"]);
            self.args.push(dir.into());
            self.made.push(dir.to_path_buf());
        }
    }
}

impl LayerImpl for Namespaces {
    fn can_be_left_out(&self) -> bool {
        true
    }

    /// The helper's own namespaces (unless `native_namespaces` is off),
    /// tried with a real run; else a system bubblewrap, tried too.
    fn probe(&self, sandbox: &mut Sandbox, options: &SandboxOptions) -> Result<(), String> {
        let native = if options.native_namespaces && sandbox.helper.is_some() {
            Some(sandbox.native_namespaces_work())
        } else {
            None
        };
        let native_problem = match &native {
            Some(Ok(())) => {
                sandbox.namespaces = NamespaceSource::Native;
                return Ok(());
            }
            Some(Err(why)) => Some(format!("the helper's own namespaces fail here ({why})")),
            None => None,
        };
        let Some(path) = find_on_path("bwrap") else {
            sandbox.namespaces = NamespaceSource::Missing {
                bwrap_failed: false,
            };
            return Err(if let Some(p) = native_problem {
                format!("{p}, and bubblewrap (bwrap) is not installed")
            } else if let Some(h) = helper_missing(sandbox) {
                format!("{h}, and bubblewrap (bwrap) is not installed")
            } else {
                "bubblewrap (bwrap) is not installed".into()
            });
        };
        match sandbox.bwrap_works(&path) {
            Ok(()) => {
                sandbox.namespaces = NamespaceSource::Bwrap {
                    path,
                    native_problem,
                };
                Ok(())
            }
            Err(why) => {
                sandbox.namespaces = NamespaceSource::Missing { bwrap_failed: true };
                Err(format!(
                    "{}{} fails here too: {why}",
                    native_problem.map(|p| format!("{p}; ")).unwrap_or_default(),
                    path.display()
                ))
            }
        }
    }

    fn report(&self, sandbox: &Sandbox) -> LayerReport {
        let what = format!(
            "{}mount, pid, net, ipc and uts namespaces; only system directories, the interpreter and the working directory are visible; /dev has null, zero, full, random and urandom only; no network; the working directory, /tmp and /dev/shm share one tmpfs of the disk quota's size; nothing outlives the run",
            if sandbox.is_root { "" } else { "user, " }
        );
        let inactive = |advice: &str| LayerReport {
            name: "namespaces".into(),
            active: false,
            detail: sandbox
                .probed(Layer::Namespaces)
                .err()
                .unwrap_or_default()
                .to_string(),
            advice: Some(advice.into()),
        };
        match &sandbox.namespaces {
            NamespaceSource::Native => LayerReport {
                name: "namespaces".into(),
                active: true,
                detail: format!("built in: {what}"),
                advice: None,
            },
            NamespaceSource::Bwrap { native_problem, .. } => LayerReport {
                name: "namespaces".into(),
                active: true,
                detail: format!(
                    "bubblewrap{}: {what}",
                    native_problem
                        .as_ref()
                        .map(|p| format!(" ({p})"))
                        .unwrap_or_default()
                ),
                advice: None,
            },
            NamespaceSource::Missing { bwrap_failed: true } => inactive(
                "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces; on Ubuntu 24.04 kernel.apparmor_restrict_unprivileged_userns=0, or install bubblewrap, whose AppArmor profile allows them)",
            ),
            NamespaceSource::Missing {
                bwrap_failed: false,
            } => inactive(
                "allow unprivileged user namespaces, or install bubblewrap: apt-get install bubblewrap (or dnf/pacman install bubblewrap)",
            ),
        }
    }

    fn stage(&self) -> Stage {
        Stage::Enter
    }

    /// The helper's own namespaces only (bubblewrap builds its root before
    /// the helper starts: `bwrap_args`).
    fn plan(&self, sandbox: &Sandbox, run: &RunPlan) -> Option<serde_json::Value> {
        if sandbox.namespaces != NamespaceSource::Native {
            return None;
        }
        let mut read_only: Vec<PathBuf> = SYSTEM_READ_DIRS.iter().map(PathBuf::from).collect();
        read_only.push(PathBuf::from(CPU_INFO_DIR));
        read_only.extend(sandbox.interp.paths.iter().cloned());
        step(&NamespacePlan {
            user: !sandbox.is_root,
            read_only,
            disk_bytes: run.limits.disk_bytes,
            max_files: run.limits.max_files,
            collect: run.collect.to_vec(),
            owner: run.run_uid,
            collect_images: run.collect_images,
        })
    }

    /// Returns only in the process that is to become the program; its init
    /// measures it and reports on the status pipe, which it takes.
    fn apply(&self, step: &serde_json::Value, child: &mut Child) -> Result<(), String> {
        let plan: NamespacePlan = read_step(Layer::Namespaces, step)?;
        enter::enter(&child.workdir, &plan, child.status_fd.take())
    }

    fn doctor<'a>(&'a self, sandbox: &'a Sandbox) -> BoxFuture<'a, Vec<ProbeResult>> {
        Box::pin(async move { vec![read_home_secret(sandbox).await] })
    }
}

async fn read_home_secret(sandbox: &Sandbox) -> ProbeResult {
    let name = "read a file in $HOME";
    let Some(home) = std::env::var_os("HOME") else {
        return ProbeResult {
            name: name.into(),
            hostile: true,
            ok: false,
            detail: "HOME is not set; nothing to try".into(),
        };
    };
    let secret = format!("codeloop-secret-{}", std::process::id());
    let file = match tempfile::Builder::new()
        .prefix(".codeloop-doctor-secret-")
        .tempfile_in(&home)
    {
        Ok(f) => f,
        Err(e) => {
            return ProbeResult {
                name: name.into(),
                hostile: true,
                ok: false,
                detail: format!("cannot place a secret in $HOME: {e}"),
            };
        }
    };
    if std::fs::write(file.path(), &secret).is_err() {
        return ProbeResult {
            name: name.into(),
            hostile: true,
            ok: false,
            detail: "cannot write the secret".into(),
        };
    }
    // Readable by anyone, so only the sandbox can stop the read.
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o644));
    let outcome = run(
        sandbox,
        READ_SECRET,
        vec![file.path().display().to_string(), secret],
    )
    .await;
    marker_probe(name, outcome, true)
}
