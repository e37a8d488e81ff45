//! Headless Chromium driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: commands in on fd 3, answers out on fd 4,
//! each a JSON message ended by a NUL byte), so a test can open a page,
//! press keys as a person does, read the DOM and take screenshots, with
//! nothing but the browser Debian packages (`scripts/test.sh` installs it).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub struct Browser {
    child: Child,
    to: ChildStdin,
    from: BufReader<ChildStdout>,
    next: u64,
    session: String,
    /// The events the page sent (method, params), oldest first.
    events: Vec<(String, Value)>,
    _profile: tempfile::TempDir,
}

/// The browser on this machine, if there is one.
pub fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        let out = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .ok()?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
    })
}

impl Browser {
    /// A headless browser with one blank page, `width` × `height` CSS pixels.
    pub fn launch(browser: &Path, width: u32, height: u32) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        // The shell hands our pipes to the browser as fds 3 and 4.
        let script = format!(
            "exec '{}' --headless --no-sandbox --disable-gpu --no-first-run --enable-precise-memory-info --remote-debugging-pipe --user-data-dir='{}' 3<&0 4>&1 0</dev/null 1>/dev/null",
            browser.display(),
            profile.path().display()
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            // Its own process group: the browser's helpers go with it.
            .process_group(0)
            .spawn()
            .unwrap();
        let to = child.stdin.take().unwrap();
        let from = BufReader::new(child.stdout.take().unwrap());
        let mut b = Browser {
            child,
            to,
            from,
            next: 1,
            session: String::new(),
            events: Vec::new(),
            _profile: profile,
        };
        let target = b.browser_call("Target.createTarget", json!({"url": "about:blank"}));
        let target = target["targetId"].as_str().unwrap().to_string();
        let attached = b.browser_call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        b.size(width, height);
        // What the page asks of the network, what it throws, what it logs.
        b.call("Network.enable", json!({}));
        b.call("Runtime.enable", json!({}));
        b.call("Log.enable", json!({}));
        b
    }

    fn send(&mut self, method: &str, params: Value, session: bool) -> Value {
        let id = self.next;
        self.next += 1;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if session {
            msg["sessionId"] = Value::String(self.session.clone());
        }
        self.to.write_all(msg.to_string().as_bytes()).unwrap();
        self.to.write_all(&[0]).unwrap();
        self.to.flush().unwrap();
        loop {
            let mut buf = Vec::new();
            let n = self.from.read_until(0, &mut buf).unwrap();
            assert!(n > 0, "the browser closed its pipe during {method}");
            buf.pop();
            let answer: Value = serde_json::from_slice(&buf).unwrap();
            if let Some(method) = answer["method"].as_str() {
                self.events
                    .push((method.to_string(), answer["params"].clone()));
                continue;
            }
            if answer["id"].as_u64() == Some(id) {
                assert!(
                    answer.get("error").is_none(),
                    "{method}: {}",
                    answer["error"]
                );
                return answer["result"].clone();
            }
        }
    }

    fn browser_call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, false)
    }

    /// The events of `method` the page sent so far.
    pub fn events(&self, method: &str) -> Vec<Value> {
        self.events
            .iter()
            .filter(|(m, _)| m == method)
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// The URLs the page asked for that are not files, and what it threw
    /// or logged as an error (a refused script or style included).
    pub fn trouble(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .events("Network.requestWillBeSent")
            .iter()
            .filter_map(|e| e["request"]["url"].as_str().map(str::to_string))
            .filter(|url| !url.starts_with("file:") && !url.starts_with("about:"))
            .map(|url| format!("fetched {url}"))
            .collect();
        out.extend(
            self.events("Runtime.exceptionThrown")
                .iter()
                .map(|e| format!("threw {}", e["exceptionDetails"])),
        );
        out.extend(
            self.events("Log.entryAdded")
                .iter()
                .filter(|e| e["entry"]["level"] == "error")
                .map(|e| format!("logged {}", e["entry"]["text"])),
        );
        out.extend(
            self.events("Runtime.consoleAPICalled")
                .iter()
                .filter(|e| e["type"] == "error")
                .map(|e| format!("console {}", e["args"])),
        );
        out
    }

    /// A command to the page.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, true)
    }

    /// The page's viewport, in CSS pixels (a phone: narrow and touch-sized).
    pub fn size(&mut self, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}),
        );
    }

    /// The value of a JavaScript expression in the page (JSON-able).
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "{expr}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Open `url` and wait until `ready` (an expression) is true.
    pub fn open(&mut self, url: &str, ready: &str) {
        self.call("Page.navigate", json!({"url": url}));
        self.wait(ready);
    }

    /// Wait until `expr` is true (10 s at most; an exception, as while
    /// the page loads, is not true yet).
    pub fn wait(&mut self, expr: &str) {
        let start = Instant::now();
        loop {
            let probe = format!(
                "(() => {{ try {{ return !!({expr}); }} catch (e) {{ return false; }} }})()"
            );
            if self.eval(&probe) == Value::Bool(true) {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "still not true after 10 s: {expr}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A key pressed and let go, as the keyboard sends it (`key` is the
    /// DOM's name: "ArrowRight", "]", " ").
    pub fn key(&mut self, key: &str) {
        let (code, vk, text) = match key {
            "ArrowLeft" => ("ArrowLeft", 37, ""),
            "ArrowUp" => ("ArrowUp", 38, ""),
            "ArrowRight" => ("ArrowRight", 39, ""),
            "ArrowDown" => ("ArrowDown", 40, ""),
            "Home" => ("Home", 36, ""),
            "End" => ("End", 35, ""),
            "Escape" => ("Escape", 27, ""),
            " " => ("Space", 32, " "),
            "[" => ("BracketLeft", 219, "["),
            "]" => ("BracketRight", 221, "]"),
            other => (
                "",
                other.chars().next().unwrap().to_ascii_uppercase() as u32,
                other,
            ),
        };
        let kind = if text.is_empty() {
            "rawKeyDown"
        } else {
            "keyDown"
        };
        self.call(
            "Input.dispatchKeyEvent",
            json!({"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": vk, "text": text}),
        );
        self.call(
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk}),
        );
    }

    /// A PNG of the whole page (not only the viewport), written to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        let png = base64_decode(shot["data"].as_str().unwrap());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The browser's process group, which is its own (`process_group(0)`
        // at spawn: its id is the browser's pid), by number: never a `kill`
        // command's parsing of a negative argument, which can mean -1.
        if let Ok(group) = i32::try_from(self.child.id())
            && group > 1
        {
            // kill(2) with a negative pid signals that process group only;
            // the group is the browser's own.
            if let Some(pid) = rustix::process::Pid::from_raw(group) {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut rest = Vec::new();
        let _ = self.from.read_to_end(&mut rest);
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        let Some(v) = ABC.iter().position(|&a| a == c) else {
            continue;
        };
        acc = (acc << 6) | v as u32;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}
