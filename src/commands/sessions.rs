//! `codeloop sessions`: the sessions on disk, newest first, as a table or as
//! JSON for scripts.

use std::io::{IsTerminal, Write};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::config::Config;
use crate::session::index::{self, SessionSummary};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the list as a JSON array (one object a session) instead of a table
    #[arg(long)]
    pub(crate) json: bool,
}

pub async fn run(args: Args, config: Config) -> anyhow::Result<i32> {
    let dir = config.sessions_dir();
    let listing = tokio::task::spawn_blocking(move || index::list(&dir)).await??;
    for (dir, why) in &listing.skipped {
        let line = format!("codeloop: skipped {}: {why}", dir.display());
        eprintln!("{}", crate::protocol::sanitize::for_terminal(&line));
    }
    for (dir, damage) in &listing.damaged {
        let line = format!(
            "codeloop: {}: {damage}; listed from the rest",
            dir.display()
        );
        eprintln!("{}", crate::protocol::sanitize::for_terminal(&line));
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        // Tasks and models come from the tapes: C1 controls escaped too
        // (serde_json escapes only C0), so a terminal showing it is safe.
        let json = serde_json::to_string_pretty(&listing.sessions)?;
        writeln!(out, "{}", crate::protocol::sanitize::for_json(&json))?;
        return Ok(0);
    }
    if listing.sessions.is_empty() {
        eprintln!(
            "no sessions yet in {} (`codeloop run` or the workbench makes one)",
            config.sessions_dir().display()
        );
        return Ok(0);
    }
    let width = terminal_width();
    // Tasks and models come from the tapes: never raw to a terminal.
    let table = crate::protocol::sanitize::for_terminal(&table(&listing.sessions, width));
    out.write_all(table.as_bytes())?;
    Ok(0)
}

/// The width to fit: the terminal's, else `$COLUMNS`, else 120.
fn terminal_width() -> usize {
    if std::io::stdout().is_terminal()
        && let Ok((w, _)) = crossterm::terminal::size()
    {
        return w as usize;
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(120)
}

const HEADERS: [&str; 8] = [
    "ID",
    "STARTED (UTC)",
    "TASK",
    "MODEL",
    "RESULT",
    "ITER",
    "TOKENS",
    "PARENT",
];
/// The column that gives up width so a line fits.
const TASK: usize = 2;
const MIN_TASK_WIDTH: usize = 12;

/// The sessions as a table whose lines fit `width` columns: the task is cut
/// (with an ellipsis) to what the other columns leave.
pub(crate) fn table(sessions: &[SessionSummary], width: usize) -> String {
    let rows: Vec<[String; 8]> = sessions
        .iter()
        .map(|s| {
            [
                s.id.clone(),
                started(&s.started_at),
                one_line(&s.task),
                crate::protocol::present::model_shown(&s.model).to_string(),
                s.result.label().to_string(),
                s.iterations.to_string(),
                s.tokens.to_string(),
                s.parent.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = HEADERS.iter().map(|h| h.width()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.width());
        }
    }
    let others: usize = widths
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != TASK)
        .map(|(_, w)| w + 2)
        .sum();
    widths[TASK] = widths[TASK].min(width.saturating_sub(others).max(MIN_TASK_WIDTH));
    let mut out = String::new();
    let headers = HEADERS.map(str::to_string);
    for row in std::iter::once(&headers).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
            let cell = cut(cell, *w);
            let pad = w - cell.width();
            // Numbers align right, words left.
            if i == 5 || i == 6 {
                line.push_str(&" ".repeat(pad));
                line.push_str(&cell);
            } else {
                line.push_str(&cell);
                line.push_str(&" ".repeat(pad));
            }
            line.push_str("  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `2026-11-23T04:23:11.5Z` -> `2026-11-23 04:23`
fn started(rfc3339: &str) -> String {
    rfc3339.get(..16).unwrap_or(rfc3339).replacen('T', " ", 1)
}

/// Whitespace (newlines too) collapsed to single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to `width` columns, ending in `…` when cut.
fn cut(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_task_is_cut_to_the_width() {
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
        assert_eq!(cut("日本語です", 5), "日本…");
        assert_eq!(started("2026-11-23T04:23:11.123Z"), "2026-11-23 04:23");
        assert_eq!(one_line("a\n  b\tc "), "a b c");
    }
}
