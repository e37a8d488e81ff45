//! A fork server: one warm interpreter inside the sandbox (every layer the
//! sandbox gives) that runs jobs one at a time in forked children. A job
//! skips the interpreter start (~8 ms here, more with `site`), and its child
//! still gets a fresh directory, its own rlimits, and a nested Landlock
//! domain (writes only beneath its directory, no signals outside itself);
//! after each job everything else in the sandbox is killed and the scratch
//! areas wiped. Output is not streamed: it is collected when the job ends.
//!
//! Each job's child is forked before the server reads that job (jobs are
//! framed by length and read exactly, never ahead), so its memory never
//! holds its own job's files (an evaluation's pass token among them). Jobs
//! may be queued (`submit`, then `next_outcome`): the server takes the next
//! one as soon as the previous is cleaned up. Each reply carries where the
//! job's time went (`last_phases`).
//!
//! Compared with `Sandbox::run`, jobs of one server share a uid, a pid
//! namespace and a Landlock domain (made safe by running one job at a time
//! and cleaning up after it); `Sandbox::run` gives each run its own.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::mpsc;

use super::layers::uid::next_run_uid;
use super::run::{chown_tree, classify, prepare_workdir};
use super::{Captured, ExecError, LimitHit, Limits, Outcome, RunSpec, Sandbox};

const SERVER_FILE: &str = "_codeloop_forkserver.py";
/// The server's one script: its file helpers, then the server.
const SERVER_SOURCE: &str = concat!(
    include_str!("forkserver_files.py"),
    include_str!("forkserver.py")
);
/// How long the server may take to start and say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long past a job's own wall clock the server may take to answer.
const REPLY_GRACE: Duration = Duration::from_secs(5);
/// Jobs submitted to one server and not yet answered, at most.
pub(crate) const MAX_QUEUED: usize = 8;
/// Bytes of the server's own stderr kept for error messages.
const SERVER_STDERR_KEEP: usize = 4096;

pub struct ForkServer {
    child: Child,
    /// Framed jobs, written to the server's stdin by a task of their own (so
    /// a job waiting to be written never blocks reading a reply).
    jobs: mpsc::Sender<Vec<u8>>,
    queued: VecDeque<Queued>,
    last_reply: Instant,
    replies: tokio::io::Lines<BufReader<ChildStdout>>,
    stderr: tokio::task::JoinHandle<String>,
    pgid: Option<i32>,
    next_id: u64,
    layers: Vec<String>,
    broken: bool,
    /// Whether its prelude has a judge (`submit_judged`).
    judges: bool,
    /// Where the last job's time went: the server's phases, then the round
    /// trip as this side saw it.
    phases: Vec<(String, f64)>,
    /// The server's own uid, where it has one and no private /dev/shm.
    sweep_uid: Option<u32>,
    // Removed (with everything the jobs left) when the server goes.
    _workdir: TempDir,
}

/// A module a fork server runs once, before any fork, as
/// `_codeloop_prelude`: its jobs' scripts call into it, so what it sets up
/// is made once per server, not once per job (the evaluator's runner).
/// Its `learn(files, args)`, if it has one, runs in the server after each
/// job (never a job's code). Its `judge(control, read_frame)`, if it has
/// one, is a long-lived child of the server, forked before any job, that
/// answers for each judged job (`ForkServer::submit_judged`): it reads the
/// job's own frame from the server's stdin (never read by the server, so
/// never in a child forked from it) and talks to the job's child over a
/// socket pair (the child's end named in `CODELOOP_JUDGE_FD`); its answer
/// is the job's `Outcome::judged`.
#[derive(Debug, Clone, Copy)]
pub struct Prelude {
    /// Its file name in the server's directory.
    pub file: &'static str,
    pub source: &'static str,
}

/// A submitted job waiting for its outcome.
struct Queued {
    id: u64,
    limits: Limits,
    submitted: Instant,
}

#[derive(Serialize)]
struct Job<'a> {
    id: u64,
    files: &'a [(String, String)],
    script: &'a str,
    args: &'a [String],
    wall: f64,
    cpu: u64,
    mem: u64,
    fsize: u64,
    nofile: u64,
    keep: usize,
    collect: &'a [String],
    disk: u64,
    /// Entries the job's directory may hold.
    entries: u64,
    require_confinement: bool,
    /// Its judge's frame follows it on the server's stdin.
    judged: bool,
}

#[derive(Deserialize)]
struct Reply {
    id: u64,
    exit_code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    disk_full: bool,
    #[serde(default)]
    files_full: bool,
    duration: f64,
    /// The job's CPU time in seconds and its peak RSS in KiB (`os.wait4`).
    #[serde(default)]
    cpu: Option<f64>,
    #[serde(default)]
    maxrss_kib: Option<u64>,
    stdout: (String, String, u64, u64),
    stderr: (String, String, u64, u64),
    collected: Vec<(String, String)>,
    /// The judge's answer for a judged job (none when it had none).
    #[serde(default)]
    judged: Option<String>,
    #[serde(default)]
    phases: Vec<(String, f64)>,
}

#[derive(Deserialize)]
struct Ready {
    ready: bool,
    /// Whether its jobs enter a Landlock domain (it was given a ruleset).
    confined: bool,
    /// Whether its prelude's judge runs.
    #[serde(default)]
    judge: bool,
}

/// What the server is told at its start (its one argument, as JSON).
#[derive(Serialize)]
struct Setup {
    /// Where jobs run: `jobdir` beneath it, emptied between jobs.
    jobs: String,
    jobdir: String,
    /// Where a job's output goes.
    out: String,
    /// Kill every other process of the uid after a job (a pid namespace,
    /// or a uid of its own); else the job's group and the server's
    /// descendants.
    kill_all: bool,
    /// /dev/shm is the sandbox's own, wiped after each job.
    private_shm: bool,
    prelude: Option<&'static str>,
    /// Each job's nested Landlock domain (`None`: no Landlock here).
    ruleset: Option<super::layers::landlock::RulesetSpec>,
    /// The prctl options the server sets on itself: no same-uid access to
    /// its /proc entries, and orphans of a job reparented to it.
    prctl: Prctl,
}

#[derive(Serialize)]
struct Prctl {
    set_dumpable: i32,
    set_child_subreaper: i32,
}

impl Sandbox {
    /// Start a fork server inside the sandbox. `limits` bound the server as
    /// a whole (its memory, its processes, the scratch space of its jobs).
    pub async fn fork_server(&self, limits: Limits) -> Result<ForkServer, ExecError> {
        self.fork_server_with(limits, None).await
    }

    /// A fork server that runs `prelude` once, before its first fork.
    pub async fn fork_server_with(
        &self,
        limits: Limits,
        prelude: Option<Prelude>,
    ) -> Result<ForkServer, ExecError> {
        let workdir = self.fresh_workdir("codeloop-forkserver-")?;
        let root = workdir.path().to_path_buf();
        let run_uid = self.drop_uid().then(next_run_uid);
        let spec = self.server_spec(&root, limits, prelude, run_uid.is_some())?;
        prepare_workdir(&root, &spec)?;
        if let Some(uid) = run_uid {
            chown_tree(&root, uid).map_err(ExecError::Workdir)?;
        }
        let mut cmd = self.command(&root, &spec, run_uid)?;
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().map_err(|source| ExecError::Spawn {
            interpreter: self.interpreter.display().to_string(),
            source,
        })?;
        let pgid = child.id().map(|id| id as i32);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ExecError::Sandbox("the fork server has no pipes".into()));
        };
        let stderr = tokio::spawn(server_stderr(stderr));
        let mut replies = BufReader::new(stdout).lines();
        let (jobs, pending) = mpsc::channel(MAX_QUEUED);
        tokio::spawn(write_jobs(stdin, pending));
        let first = tokio::time::timeout(START_TIMEOUT, replies.next_line()).await;
        let mut server = ForkServer {
            child,
            jobs,
            queued: VecDeque::new(),
            last_reply: Instant::now(),
            replies,
            stderr,
            pgid,
            next_id: 0,
            layers: self.active_layers(),
            broken: false,
            judges: false,
            phases: Vec::new(),
            sweep_uid: run_uid.filter(|_| !self.has_namespaces()),
            _workdir: workdir,
        };
        let ready: Option<Ready> = match first {
            Ok(Ok(Some(line))) => serde_json::from_str(&line).ok(),
            _ => None,
        };
        match ready {
            Some(r) if r.ready => {
                if self.uses(super::Layer::Landlock) && !r.confined {
                    return Err(ExecError::Sandbox(
                        "the fork server cannot confine its jobs with Landlock".into(),
                    ));
                }
                server.judges = r.judge;
                Ok(server)
            }
            _ => Err(server.failure("the fork server did not start").await),
        }
    }

    /// The fork server's own run: its script, its prelude and the import
    /// guard as files, and its set-up (where jobs run, how their leftovers
    /// are killed, each job's Landlock ruleset) as its argument. `own_uid`:
    /// the server runs as a uid of its own.
    fn server_spec(
        &self,
        root: &Path,
        limits: Limits,
        prelude: Option<Prelude>,
        own_uid: bool,
    ) -> Result<RunSpec, ExecError> {
        // With namespaces the jobs live on the private, size-limited tmpfs
        // /tmp (fast to create and wipe); jobs themselves may write only
        // beneath their own directory there, and to the private /dev/shm
        // (multiprocessing), which is wiped after each job.
        let jobs = if self.has_namespaces() {
            PathBuf::from("/tmp/codeloop-jobs")
        } else {
            root.join("jobs")
        };
        let jobdir = jobs.join("job");
        let out = root.join("_out").display().to_string();
        let kill_all = self.has_namespaces() || own_uid;
        let mut files = vec![(SERVER_FILE.to_string(), SERVER_SOURCE.to_string())];
        if let Some(p) = prelude {
            files.push((p.file.to_string(), p.source.to_string()));
        }
        // The import policy, where enforced: each child installs the guard
        // before its job (the server itself imports what it needs first).
        if self.import_policy.enforce {
            files.push((
                super::policy::GUARD_FILE.to_string(),
                self.import_policy.guard_source(),
            ));
        }
        let setup = Setup {
            jobs: jobs.display().to_string(),
            jobdir: jobdir.display().to_string(),
            out,
            kill_all,
            private_shm: self.has_namespaces(),
            prelude: prelude.map(|p| p.file),
            ruleset: super::layers::landlock::job_ruleset(
                self.landlock_abi,
                &jobdir,
                self.has_namespaces(),
            ),
            prctl: Prctl {
                set_dumpable: libc::PR_SET_DUMPABLE,
                set_child_subreaper: libc::PR_SET_CHILD_SUBREAPER,
            },
        };
        let args = vec![
            serde_json::to_string(&setup)
                .map_err(|e| ExecError::Sandbox(format!("cannot encode the set-up: {e}")))?,
        ];
        Ok(RunSpec {
            files,
            script: SERVER_FILE.into(),
            args,
            limits: Limits {
                // The server lives as long as its owner; the jobs have their own clocks.
                cpu_secs: 24 * 3600,
                ..limits
            },
            no_site: true,
            unguarded: true,
            ..RunSpec::default()
        })
    }
}

impl ForkServer {
    /// Run one job: `files`, `script`, `args`, `limits` and `collect` of the
    /// spec are used (`inputs` and `log_path` are not supported here).
    pub async fn run(&mut self, spec: &RunSpec) -> Result<Outcome, ExecError> {
        self.submit(spec)?;
        self.next_outcome().await
    }

    /// Queue a job behind those already submitted (at most
    /// `MAX_QUEUED` wait for their outcome); the server runs them one at a
    /// time, in order, and reads a job only once the one before it is over
    /// and cleaned up. Queueing the next job while one runs keeps the server
    /// from waiting on this side between jobs.
    pub fn submit(&mut self, spec: &RunSpec) -> Result<(), ExecError> {
        self.submit_framed(spec, None)
    }

    /// Queue a job its prelude's judge answers for (`Outcome::judged`):
    /// `judge` is the judge's own frame, which goes to the judge alone
    /// (the server never reads it, the job's child never holds it).
    pub fn submit_judged(&mut self, spec: &RunSpec, judge: &str) -> Result<(), ExecError> {
        if !self.judges {
            return Err(ExecError::Sandbox(
                "this fork server has no judge (its prelude defines none)".into(),
            ));
        }
        self.submit_framed(spec, Some(judge))
    }

    fn submit_framed(&mut self, spec: &RunSpec, judge: Option<&str>) -> Result<(), ExecError> {
        if self.broken {
            return Err(ExecError::Sandbox("the fork server has stopped".into()));
        }
        if !spec.inputs.is_empty() || spec.log_path.is_some() {
            return Err(ExecError::Sandbox(
                "fork server jobs take files, not inputs or a log path".into(),
            ));
        }
        if self.queued.len() >= MAX_QUEUED {
            return Err(ExecError::Sandbox(format!(
                "more than {MAX_QUEUED} jobs queued on one fork server; take an outcome first"
            )));
        }
        let id = self.next_id + 1;
        let l = &spec.limits;
        let job = Job {
            id,
            files: &spec.files,
            script: &spec.script,
            args: &spec.args,
            wall: l.wall.as_secs_f64(),
            cpu: l.cpu_secs.max(1),
            mem: l.memory_bytes,
            fsize: l.file_size_bytes,
            nofile: l.open_files,
            keep: l.output_keep_bytes,
            collect: &spec.collect,
            disk: l.disk_bytes,
            entries: l.max_files.saturating_add(super::OWN_ENTRIES),
            require_confinement: true,
            judged: judge.is_some(),
        };
        let body = serde_json::to_string(&job)
            .map_err(|e| ExecError::Sandbox(format!("cannot encode a job: {e}")))?;
        // Each frame its length first: the server reads exactly one job at
        // a time, and the judge exactly its own frame after it.
        let mut framed = Vec::new();
        for frame in std::iter::once(body.as_str()).chain(judge) {
            if frame.len() > u32::MAX as usize {
                return Err(ExecError::Sandbox(format!(
                    "a job of {} bytes is too large for the fork server (4 GiB at most)",
                    frame.len()
                )));
            }
            framed.extend_from_slice(format!("{:08x}", frame.len()).as_bytes());
            framed.extend_from_slice(frame.as_bytes());
        }
        if self.jobs.try_send(framed).is_err() {
            self.broken = true;
            return Err(ExecError::Sandbox("the fork server is gone".into()));
        }
        self.next_id = id;
        self.queued.push_back(Queued {
            id,
            limits: l.clone(),
            submitted: Instant::now(),
        });
        Ok(())
    }

    /// How many submitted jobs have not given their outcome yet.
    pub fn queued(&self) -> usize {
        self.queued.len()
    }

    /// The outcome of the oldest submitted job. A server that does not
    /// answer within the job's wall clock (counted from when the job before
    /// it ended) and a grace period is killed.
    pub async fn next_outcome(&mut self) -> Result<Outcome, ExecError> {
        let Some(job) = self.queued.pop_front() else {
            return Err(ExecError::Sandbox(
                "no job was submitted to the fork server".into(),
            ));
        };
        if self.broken {
            return Err(ExecError::Sandbox("the fork server has stopped".into()));
        }
        let since = self.last_reply.max(job.submitted);
        let mut reply = self
            .read_reply(since + job.limits.wall.saturating_add(REPLY_GRACE))
            .await?;
        let now = Instant::now();
        self.phases = std::mem::take(&mut reply.phases);
        self.phases
            .push(("round trip".into(), now.duration_since(since).as_secs_f64()));
        self.last_reply = now;
        if reply.id != job.id {
            self.broken = true;
            return Err(ExecError::Sandbox(
                "the fork server answered out of turn".into(),
            ));
        }
        Ok(reply.into_outcome(&job.limits, self.layers.clone()))
    }

    /// The server's next reply, by `deadline`; the server is broken (and
    /// killed where it went silent) when none comes or it is not one.
    async fn read_reply(&mut self, deadline: Instant) -> Result<Reply, ExecError> {
        let reply = tokio::time::timeout_at(deadline.into(), self.replies.next_line()).await;
        match reply {
            Ok(Ok(Some(text))) => match serde_json::from_str(&text) {
                Ok(r) => Ok(r),
                Err(e) => {
                    self.broken = true;
                    Err(ExecError::Sandbox(format!(
                        "the fork server answered nonsense: {e}"
                    )))
                }
            },
            Ok(_) => {
                self.broken = true;
                Err(self.failure("the fork server ended").await)
            }
            Err(_) => {
                self.broken = true;
                self.kill();
                Err(ExecError::Sandbox(
                    "the fork server stopped answering and was killed".into(),
                ))
            }
        }
    }

    /// Where the last job's time went, in seconds: the server's phases in
    /// order, its CPU and its child's, then the round trip seen from here;
    /// and "faults child", a count: the minor page faults of the job's
    /// processes.
    pub fn last_phases(&self) -> &[(String, f64)] {
        &self.phases
    }

    /// False once the server died or misbehaved; start a new one then.
    pub fn is_alive(&self) -> bool {
        !self.broken
    }

    fn kill(&mut self) {
        if let Some(pg) = self.pgid {
            super::sys::kill_group(pg);
        }
        let _ = self.child.start_kill();
    }

    async fn failure(&mut self, what: &str) -> ExecError {
        self.kill();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
        let stderr = tokio::time::timeout(Duration::from_secs(1), &mut self.stderr)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        ExecError::Sandbox(format!("{what}: {}", stderr.trim()))
    }
}

impl Reply {
    /// The job's outcome as the server reported it: how its child ended,
    /// the limit it hit, its output, the files it left, its own figures.
    fn into_outcome(self, limits: &Limits, layers: Vec<String>) -> Outcome {
        let captured = |(head, tail, dropped, _total): (String, String, u64, u64)| Captured {
            head,
            tail,
            dropped_bytes: dropped,
        };
        let stdout = captured(self.stdout);
        let stderr = captured(self.stderr);
        let limit_hit = if self.timed_out {
            Some(LimitHit::WallTimeout(limits.wall))
        } else if self.disk_full {
            Some(LimitHit::Disk(limits.disk_bytes))
        } else if self.files_full {
            Some(LimitHit::Files(limits.max_files))
        } else {
            classify(
                self.exit_code,
                self.signal,
                &stderr.text(),
                &RunSpec {
                    limits: limits.clone(),
                    ..RunSpec::default()
                },
            )
        };
        Outcome {
            exit_code: self.exit_code,
            signal: self.signal,
            limit_hit,
            duration: Duration::try_from_secs_f64(self.duration).unwrap_or_default(),
            stdout,
            stderr,
            layers,
            collected: self
                .collected
                .into_iter()
                .map(|(n, t)| (n, t.into_bytes()))
                .collect(),
            images: Vec::new(),
            judged: self.judged,
            usage: match (self.cpu, self.maxrss_kib) {
                (Some(cpu), Some(kib)) => Some(super::Usage {
                    cpu_ms: (cpu.max(0.0) * 1000.0) as u64,
                    peak_rss_bytes: kib * 1024,
                }),
                _ => None,
            },
        }
    }
}

/// Write each framed job to the server in turn; when the jobs' sender goes
/// (or the server does), the server's stdin closes and it ends.
/// What the server wrote to its stderr, the first `SERVER_STDERR_KEEP`
/// bytes (said when it fails).
async fn server_stderr(stderr: tokio::process::ChildStderr) -> String {
    let mut buf = Vec::new();
    let _ = stderr
        .take(SERVER_STDERR_KEEP as u64)
        .read_to_end(&mut buf)
        .await;
    String::from_utf8_lossy(&buf).into_owned()
}

async fn write_jobs(mut stdin: ChildStdin, mut pending: mpsc::Receiver<Vec<u8>>) {
    while let Some(framed) = pending.recv().await {
        if stdin.write_all(&framed).await.is_err() {
            return;
        }
    }
}

impl Drop for ForkServer {
    fn drop(&mut self) {
        self.kill();
        if let Some(uid) = self.sweep_uid {
            super::run::sweep_shm(uid);
        }
        super::run::make_removable(self._workdir.path());
    }
}
