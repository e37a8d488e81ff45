//! Colour themes: TOML files in themes/ (dark and light are built in; a file
//! of the same name in the config dir's themes/ overrides them). NO_COLOR
//! turns every colour off and keeps only bold, reverse and underline.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

const BUILT_IN: &[(&str, &str)] = &[
    ("dark", include_str!("../../../themes/dark.toml")),
    ("light", include_str!("../../../themes/light.toml")),
];

#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    #[error("no theme called `{name}`: built in are {builtin}; or put {name}.toml in {dir}")]
    Unknown {
        name: String,
        builtin: String,
        dir: PathBuf,
    },
    #[error("cannot read theme file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("theme {origin} is not valid: {message}")]
    Parse { origin: String, message: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    #[allow(dead_code)]
    name: Option<String>,
    syntax: Option<String>,
    colors: ColorsFile,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ColorsFile {
    /// The background the whole frame is filled with (optional: a theme
    /// without one draws on the terminal's own, which only reads if the
    /// theme was made for it).
    background: Option<String>,
    text: String,
    dim: String,
    border: String,
    border_focused: String,
    title: String,
    accent: String,
    selection_bg: String,
    ok: String,
    error: String,
    warning: String,
    stderr: String,
    running: String,
    marker_bg: String,
    status_bg: String,
    status_text: String,
    added: String,
    removed: String,
}

/// The styles the panes draw with.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub(crate) name: String,
    /// The syntect theme for the code pane; None = no syntax colours.
    pub(crate) syntax: Option<String>,
    /// Every cell's colours where nothing else is set: the theme's
    /// background and text colour (plain for NO_COLOR, so the terminal's own).
    pub(crate) background: Style,
    pub text: Style,
    pub(crate) dim: Style,
    pub(crate) border: Style,
    pub(crate) border_focused: Style,
    pub(crate) title: Style,
    pub(crate) accent: Style,
    pub(crate) selection: Style,
    pub(crate) ok: Style,
    pub(crate) error: Style,
    pub(crate) warning: Style,
    pub(crate) stderr: Style,
    pub(crate) running: Style,
    /// The failing line of the last run.
    pub(crate) marker: Style,
    pub(crate) status: Style,
    pub(crate) added: Style,
    pub(crate) removed: Style,
    pub(crate) search_match: Style,
}

impl Theme {
    /// The theme `name`, honouring NO_COLOR (any non-empty value).
    pub fn load(name: &str, user_dir: &Path) -> Result<Theme, ThemeError> {
        if no_color() {
            return Ok(Theme::no_color());
        }
        Theme::load_coloured(name, user_dir)
    }

    /// The theme `name` from the user's themes folder or the built-in ones.
    pub(crate) fn load_coloured(name: &str, user_dir: &Path) -> Result<Theme, ThemeError> {
        let user_file = user_dir.join(format!("{name}.toml"));
        if user_file.is_file() {
            let text = std::fs::read_to_string(&user_file).map_err(|source| ThemeError::Read {
                path: user_file.clone(),
                source,
            })?;
            return Theme::parse(&text, &user_file.display().to_string());
        }
        match BUILT_IN.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => Theme::parse(text, &format!("built-in `{n}`")),
            None => Err(ThemeError::Unknown {
                name: name.to_string(),
                builtin: BUILT_IN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
                dir: user_dir.to_path_buf(),
            }),
        }
    }

    /// The built-in dark theme (the default).
    pub fn dark() -> Theme {
        Theme::parse(BUILT_IN[0].1, "built-in `dark`").unwrap_or_else(|_| Theme::no_color())
    }

    pub(crate) fn parse(text: &str, origin: &str) -> Result<Theme, ThemeError> {
        let file: ThemeFile = toml::from_str(text).map_err(|e| ThemeError::Parse {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        let c = &file.colors;
        let color = |field: &str, value: &str| {
            Color::from_str(value).map_err(|_| ThemeError::Parse {
                origin: origin.to_string(),
                message: format!(
                    "colors.{field} = {value:?} is not a colour (use a name like \"red\" or #rrggbb)"
                ),
            })
        };
        let fg = |field: &str, value: &str| color(field, value).map(|c| Style::new().fg(c));
        let text_color = color("text", &c.text)?;
        let background = match &c.background {
            Some(bg) => Style::new().bg(color("background", bg)?).fg(text_color),
            None => Style::new(),
        };
        Ok(Theme {
            name: file.name.clone().unwrap_or_else(|| origin.to_string()),
            syntax: file.syntax,
            background,
            text: Style::new().fg(text_color),
            dim: fg("dim", &c.dim)?,
            border: fg("border", &c.border)?,
            border_focused: fg("border_focused", &c.border_focused)?.add_modifier(Modifier::BOLD),
            title: fg("title", &c.title)?.add_modifier(Modifier::BOLD),
            accent: fg("accent", &c.accent)?,
            selection: Style::new()
                .bg(color("selection_bg", &c.selection_bg)?)
                .add_modifier(Modifier::BOLD),
            ok: fg("ok", &c.ok)?,
            error: fg("error", &c.error)?,
            warning: fg("warning", &c.warning)?,
            stderr: fg("stderr", &c.stderr)?,
            running: fg("running", &c.running)?,
            marker: Style::new().bg(color("marker_bg", &c.marker_bg)?),
            status: Style::new()
                .bg(color("status_bg", &c.status_bg)?)
                .fg(color("status_text", &c.status_text)?),
            added: fg("added", &c.added)?,
            removed: fg("removed", &c.removed)?,
            search_match: Style::new().add_modifier(Modifier::REVERSED),
        })
    }

    /// No colours at all: structure by bold, reverse and underline only.
    pub fn no_color() -> Theme {
        let plain = Style::new();
        Theme {
            name: "no-color".into(),
            syntax: None,
            background: plain,
            text: plain,
            dim: plain,
            border: plain,
            border_focused: plain.add_modifier(Modifier::BOLD),
            title: plain.add_modifier(Modifier::BOLD),
            accent: plain,
            selection: plain.add_modifier(Modifier::REVERSED),
            ok: plain,
            error: plain.add_modifier(Modifier::BOLD),
            warning: plain,
            stderr: plain.add_modifier(Modifier::ITALIC),
            running: plain,
            marker: plain.add_modifier(Modifier::UNDERLINED),
            status: plain.add_modifier(Modifier::REVERSED),
            added: plain,
            removed: plain,
            search_match: plain.add_modifier(Modifier::REVERSED),
        }
    }

    /// Give every cell the frame left at the terminal's default colours the
    /// theme's own: a light theme then reads on a dark terminal and the
    /// other way round. Drawing only (a pass over the finished buffer).
    pub(crate) fn fill_background(&self, buf: &mut ratatui::buffer::Buffer) {
        let (Some(bg), fg) = (self.background.bg, self.background.fg) else {
            return;
        };
        for cell in buf.content.iter_mut() {
            if cell.bg == Color::Reset {
                cell.bg = bg;
            }
            if let Some(fg) = fg
                && cell.fg == Color::Reset
            {
                cell.fg = fg;
            }
        }
    }

    /// Names of the built-in themes.
    pub(crate) fn built_in() -> impl Iterator<Item = &'static str> {
        BUILT_IN.iter().map(|(n, _)| *n)
    }
}

/// https://no-color.org: set and not empty.
pub(crate) fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_themes_parse() {
        for name in Theme::built_in() {
            let t = Theme::load_coloured(name, Path::new("/nonexistent")).unwrap();
            assert!(t.syntax.is_some(), "{name}");
            assert_ne!(t.text, Style::new(), "{name}");
            assert!(
                t.background.bg.is_some(),
                "{name} sets its background, so it reads on any terminal"
            );
        }
    }

    /// Relative luminance (WCAG) of an RGB colour.
    fn luminance(c: Color) -> f64 {
        let Color::Rgb(r, g, b) = c else {
            panic!("{c:?} is not an RGB colour");
        };
        let lin = |v: u8| {
            let v = f64::from(v) / 255.0;
            if v <= 0.03928 {
                v / 12.92
            } else {
                ((v + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
    }

    fn contrast(a: Color, b: Color) -> f64 {
        let (la, lb) = (luminance(a), luminance(b));
        (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
    }

    #[test]
    fn the_text_of_each_built_in_theme_reads_on_its_background() {
        for name in Theme::built_in() {
            let t = Theme::load_coloured(name, Path::new("/nonexistent")).unwrap();
            let bg = t.background.bg.unwrap();
            for (what, style) in [("text", t.text), ("dim", t.dim), ("error", t.error)] {
                let ratio = contrast(style.fg.unwrap(), bg);
                // WCAG: 4.5 for body text; 3 for the dimmed hints.
                let need = if what == "dim" { 3.0 } else { 4.5 };
                assert!(
                    ratio >= need,
                    "{name}: {what} has contrast {ratio:.2} < {need}"
                );
            }
        }
    }

    #[test]
    fn the_frame_is_filled_with_the_theme_background() {
        let t = Theme::load_coloured("light", Path::new("/nonexistent")).unwrap();
        let mut buf = ratatui::buffer::Buffer::empty(ratatui::layout::Rect::new(0, 0, 4, 2));
        buf[(1, 0)].set_fg(Color::Red);
        t.fill_background(&mut buf);
        assert!(buf.content.iter().all(|c| Some(c.bg) == t.background.bg));
        assert_eq!(buf[(1, 0)].fg, Color::Red, "a set colour stays");
        assert_eq!(Some(buf[(0, 0)].fg), t.text.fg);
    }

    #[test]
    fn an_unknown_theme_names_the_choices() {
        let err = Theme::load_coloured("neon", Path::new("/x")).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("dark, light") && msg.contains("neon.toml"),
            "{msg}"
        );
    }

    #[test]
    fn a_bad_colour_is_named() {
        let text = BUILT_IN[0].1.replace("#e06c75", "blurple");
        let err = Theme::parse(&text, "t").unwrap_err().to_string();
        assert!(err.contains("blurple"), "{err}");
    }

    #[test]
    fn a_user_theme_overrides_a_built_in_one() {
        let dir = tempfile::tempdir().unwrap();
        let text = BUILT_IN[1].1.replace("name = \"light\"", "name = \"mine\"");
        std::fs::write(dir.path().join("dark.toml"), text).unwrap();
        let t = Theme::load_coloured("dark", dir.path()).unwrap();
        assert_eq!(t.name, "mine");
    }
}
