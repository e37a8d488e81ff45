//! How one run is started: the helper's plan (namespaces, rlimits, uid,
//! Landlock, seccomp), the command that starts it (the helper alone, or
//! inside bubblewrap), the environment, and the uids runs drop to.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::helper::{HELPER_ARG, HelperPlan};
use super::layers::{RunPlan, rlimits};
use super::{ExecError, RunSpec, Sandbox};
/// Where `semlock.py` is put in the working directory, as `_multiprocessing.py`.
const SEMLOCK_DIR: &str = ".codeloop-py";
const SEMLOCK_PY: &str = include_str!("semlock.py");

impl Sandbox {
    pub(crate) fn command(
        &self,
        root: &Path,
        spec: &RunSpec,
        run_uid: Option<u32>,
    ) -> Result<tokio::process::Command, ExecError> {
        self.build_command(root, spec, run_uid, None)
    }

    /// The command, and with the helper a pipe (read end, write end: drop
    /// the write end once started) on which the program's raw wait status
    /// comes with its figures (`Usage`), so that an exit with 128 + N and
    /// a death by signal N read apart inside bubblewrap too.
    pub(crate) fn command_reporting_status(
        &self,
        root: &Path,
        spec: &RunSpec,
        run_uid: Option<u32>,
    ) -> Result<(tokio::process::Command, Option<StatusPipe>), ExecError> {
        if self.helper.is_none() {
            return Ok((self.build_command(root, spec, run_uid, None)?, None));
        }
        let (read, write) =
            super::layers::namespaces::enter::status_pipe().map_err(ExecError::Sandbox)?;
        let cmd = self.build_command(root, spec, run_uid, Some(write.as_raw_fd()))?;
        Ok((cmd, Some(StatusPipe { read, write })))
    }

    fn build_command(
        &self,
        root: &Path,
        spec: &RunSpec,
        run_uid: Option<u32>,
        status_fd: Option<RawFd>,
    ) -> Result<tokio::process::Command, ExecError> {
        let semlock = self.semlocks_in_pipes();
        let argv = self.python_argv(spec, semlock);
        let mut cmd = match &self.helper {
            Some(helper) => {
                let mut plan = self.helper_plan(
                    root,
                    argv,
                    &RunPlan {
                        root,
                        limits: &spec.limits,
                        run_uid,
                        collect: &spec.collect,
                        collect_images: spec.collect_images,
                    },
                );
                plan.status_fd = status_fd;
                let json = serde_json::to_string(&plan)
                    .map_err(|e| ExecError::Sandbox(format!("cannot encode the plan: {e}")))?;
                let mut cmd = self.inside_bwrap(root, helper.as_os_str());
                cmd.arg(HELPER_ARG).arg(json);
                cmd
            }
            None => self.without_helper(root, &argv, &spec.limits),
        };
        cmd.current_dir(root).env_clear().envs(sandbox_env(root));
        if semlock {
            let dir = root.join(SEMLOCK_DIR);
            std::fs::create_dir_all(&dir)
                .and_then(|()| std::fs::write(dir.join("_multiprocessing.py"), SEMLOCK_PY))
                .map_err(ExecError::Workdir)?;
            cmd.env("PYTHONPATH", &dir);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // The child becomes the leader of its own session and process group,
        // which is how the run is killed; the status pipe's write end goes on
        // to the helper.
        super::sys::own_session_before_exec(&mut cmd, status_fd);
        Ok(cmd)
    }

    /// The interpreter's command line for the spec's script: its flags,
    /// the import guard where enforced, the script and its arguments.
    fn python_argv(&self, spec: &RunSpec, semlock: bool) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![self.interpreter.clone().into_os_string()];
        // Not -I: that implies -P, and the harness imports the node's
        // module from the working directory. -E unless the environment
        // (cleared to an allowlist either way) must carry PYTHONPATH.
        if !semlock {
            argv.push("-E".into());
        }
        argv.extend(["-s", "-u", "-B"].map(OsString::from));
        if spec.no_site {
            argv.push("-S".into());
        }
        if self.import_policy.enforce && !spec.unguarded && !spec.guards_itself {
            // The import policy's guard first, then the script as `python
            // script.py` would run it (policy.rs).
            argv.push("-c".into());
            argv.push(self.import_policy.bootstrap().into());
        }
        argv.push(spec.script.clone().into());
        argv.extend(spec.args.iter().map(OsString::from));
        argv
    }

    /// `program`, inside bubblewrap where there is one.
    fn inside_bwrap(&self, root: &Path, program: &std::ffi::OsStr) -> tokio::process::Command {
        match self.bwrap() {
            Some(bwrap) => {
                let mut c = tokio::process::Command::new(bwrap);
                c.args(self.bwrap_args(root));
                c.arg("--").arg(program);
                c
            }
            None => tokio::process::Command::new(program),
        }
    }

    /// No helper binary: limits set in the child before exec, no Landlock
    /// or seccomp (reported as inactive).
    fn without_helper(
        &self,
        root: &Path,
        argv: &[OsString],
        limits: &super::Limits,
    ) -> tokio::process::Command {
        let mut c = self.inside_bwrap(root, &argv[0]);
        c.args(&argv[1..]);
        let r = rlimits::for_run(self, limits);
        super::sys::limit_before_exec(
            &mut c,
            [
                (libc::RLIMIT_CPU, r.cpu_secs),
                (libc::RLIMIT_AS, r.address_space),
                (libc::RLIMIT_FSIZE, r.file_size),
                (libc::RLIMIT_NOFILE, r.open_files),
                (libc::RLIMIT_CORE, 0),
            ],
        );
        c
    }

    /// Without a /dev/shm of its own and without a uid of its own, a run
    /// may not write the host's /dev/shm, where glibc makes every POSIX
    /// semaphore: multiprocessing then gets its semaphores from
    /// `semlock.py`, which keeps them in pipes.
    pub(crate) fn semlocks_in_pipes(&self) -> bool {
        !self.has_namespaces() && !self.drop_uid()
    }

    /// What the helper does for one run: each layer's step.
    pub(crate) fn helper_plan(
        &self,
        root: &Path,
        argv: Vec<OsString>,
        run: &RunPlan,
    ) -> HelperPlan {
        HelperPlan {
            workdir: root.to_path_buf(),
            argv,
            steps: self.layer_steps(run),
            status_fd: None,
        }
    }

    /// The status when no raw one came through a status pipe: with
    /// bubblewrap (whose init reports a kill as 128 + signal) that is only
    /// when the helper failed before it could start the program. The
    /// helper's own namespaces end the helper as the program ended, so its
    /// status is the program's.
    pub(crate) fn decode_status(
        &self,
        status: std::process::ExitStatus,
    ) -> (Option<i32>, Option<i32>) {
        match (status.code(), status.signal()) {
            (Some(code), _) if self.bwrap().is_some() && code > 128 && code < 128 + 65 => {
                (None, Some(code - 128))
            }
            (code, signal) => (code, signal),
        }
    }

    pub(crate) async fn kill_uid(&self, uid: u32) {
        let Some(helper) = &self.helper else {
            return;
        };
        let mut cmd = tokio::process::Command::new(helper);
        cmd.args([HELPER_ARG, "--kill-uid", &uid.to_string()])
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        if let Ok(mut child) = cmd.spawn() {
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
        }
    }
}

/// Where the helper inside bubblewrap writes the program's raw wait status.
pub(crate) struct StatusPipe {
    pub read: std::fs::File,
    pub write: std::fs::File,
}

impl StatusPipe {
    /// The status and the figures, once the helper has ended (`None` if it
    /// wrote none).
    pub(crate) fn status(self) -> Option<(i32, Option<super::Usage>)> {
        drop(self.write);
        // Never block on a writer that is still around.
        super::sys::set_nonblocking(&self.read);
        super::layers::namespaces::enter::read_status(self.read)
    }
}

/// The whole environment a run sees.
pub(crate) fn sandbox_env(root: &Path) -> Vec<(OsString, OsString)> {
    let tmp = root.join(".tmp");
    vec![
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("HOME".into(), root.as_os_str().to_owned()),
        ("PWD".into(), root.as_os_str().to_owned()),
        ("TMPDIR".into(), tmp.into_os_string()),
        ("LANG".into(), "C.UTF-8".into()),
        ("LC_ALL".into(), "C.UTF-8".into()),
        ("TERM".into(), "dumb".into()),
    ]
}
