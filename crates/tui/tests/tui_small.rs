//! Issue 13's small ones: the code pane's tabs answer a click; a zoomed
//! pane's title is the pane shown; at 80x24 the notes do not push the
//! reflection out of History; the plan streams into the graph's place; Tab
//! visits the panes each screen shows (the registry's layout), zoomed or not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_testkit::tui_support;

use codeloop_session::*;
use codeloop_tui::app::view::layout;
use codeloop_tui::app::{CodeTab, Focus};
use codeloop_tui::{App, Msg};
use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::Rect;
use tui_support::*;

fn click(column: u16, row: u16) -> Msg {
    Msg::Term(TermEvent::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }))
}

fn index_of(pred: impl Fn(&Event) -> bool) -> usize {
    records().iter().position(|r| pred(&r.event)).unwrap()
}

/// The column (in cells) where `needle` starts on `row` of `screen`.
fn column_of(screen: &str, row: u16, needle: &str) -> u16 {
    let line = screen.lines().nth(usize::from(row)).unwrap();
    let line = line.trim_matches('"');
    let at = line
        .find(needle)
        .unwrap_or_else(|| panic!("{needle} not on {line}"));
    line[..at].chars().count() as u16
}

#[test]
fn clicking_a_tab_in_the_code_pane_title_shows_that_tab() {
    let mut app = App::review(tape(), info(), theme());
    app.set_cursor(index_of(|e| matches!(e, Event::Localized(_))) + 1);
    let screen = screen(&mut app, 160, 48);
    let code = layout(&app, Rect::new(0, 0, 160, 48)).of(Focus::Code);
    let x = column_of(&screen, code.y, "[t tests]");
    app.update(click(x + 2, code.y));
    assert_eq!(app.panes().code.tab(), CodeTab::Tests);
    assert_eq!(app.focus(), Focus::Code);
    // The title changed with the tab: click where the tabs are now.
    let screen = tui_support::screen(&mut app, 160, 48);
    let x = column_of(&screen, code.y, "[d diff]");
    app.update(click(x, code.y));
    assert_eq!(app.panes().code.tab(), CodeTab::Diff);
    let screen = tui_support::screen(&mut app, 160, 48);
    let x = column_of(&screen, code.y, "[code]");
    app.update(click(x + 5, code.y));
    assert_eq!(app.panes().code.tab(), CodeTab::Code);
    // A click on the title's name is not on a tab.
    app.update(click(code.x + 2, code.y));
    assert_eq!(app.panes().code.tab(), CodeTab::Code);
}

#[test]
fn a_zoomed_pane_is_titled_by_the_pane_shown_as_focus_moves() {
    let mut app = App::review(tape(), info(), theme());
    app.set_zoom(true);
    for _ in 0..6 {
        let shown = app.panes().get(app.focus()).title();
        let screen = screen(&mut app, 80, 24);
        let top = screen.lines().next().unwrap();
        assert!(top.contains(&format!(" {shown} ")), "{shown}: {top}");
        let hint = screen.lines().nth(23).unwrap();
        assert!(hint.starts_with(&format!("\" {shown} ")), "{shown}: {hint}");
        app.update(key(KeyCode::Tab));
    }
}

#[test]
fn at_80x24_the_notes_do_not_push_the_reflection_out_of_history() {
    let n = index_of(|e| matches!(e, Event::Code(CodeEvent { iteration: 2, .. })));
    let mut app = App::live(info(), theme());
    app.task_mut().insert_str("sum key=value lines");
    app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char('s'),
        KeyModifiers::CONTROL,
    ))));
    let mut events: Vec<Event> = events().into_iter().take(n).collect();
    for message in [
        "demo model: its replies are authored fixtures, played back offline; the runs, failures and repairs are real",
        "token counts are estimated (about 4 characters a token): the model does not report its usage",
        "the sandbox has every layer this machine offers",
    ] {
        events.push(Event::Notice(NoticeEvent {
            level: NoticeLevel::Info,
            message: message.into(),
        }));
    }
    for (i, event) in events.into_iter().enumerate() {
        app.update(Msg::Record(Record {
            seq: i as u64,
            t_ms: i as u64,
            event,
        }));
    }
    let screen = screen(&mut app, 80, 24);
    assert!(
        screen.contains("without '='."),
        "the reflection's end is in view:\n{screen}"
    );
    assert!(screen.contains("note (+2): the sandbox…"), "{screen}");
    insta::assert_snapshot!("history_notes_collapse_at_80x24", screen);
}

#[test]
fn the_plan_streams_into_the_graphs_place() {
    let mut app = App::live(info(), theme());
    app.task_mut().insert_str("count words");
    app.update(Msg::Term(TermEvent::Key(KeyEvent::new(
        KeyCode::Char('s'),
        KeyModifiers::CONTROL,
    ))));
    let first = events().into_iter().next().unwrap();
    let events = vec![
        first,
        Event::ModelRequest(ModelRequestEvent {
            call_id: 1,
            purpose: Purpose::Plan,
            tag: "plan".into(),
            messages: vec![],
        }),
        Event::ModelDelta(ModelDeltaEvent {
            call_id: 1,
            text: "```json\n{\"functions\": [\n  {\"name\": \"tokenize\", \"purpose\": \"split words\"},\n".into(),
        }),
        Event::ModelDelta(ModelDeltaEvent {
            call_id: 1,
            text: "  {\"name\": \"top_wo".into(),
        }),
    ];
    for (i, event) in events.into_iter().enumerate() {
        app.update(Msg::Record(Record {
            seq: i as u64,
            t_ms: i as u64,
            event,
        }));
    }
    let screen = screen(&mut app, 160, 48);
    assert!(screen.contains("planning… 1 function so far"), "{screen}");
    assert!(screen.contains("· tokenize"), "{screen}");
    assert!(screen.contains("{\"name\": \"top_wo▌"), "{screen}");
    insta::assert_snapshot!(
        "plan_streams_at_80x24",
        tui_support::screen(&mut app, 80, 24)
    );
}

#[test]
fn zoomed_on_the_code_while_the_model_reflects_the_title_names_no_hidden_pane() {
    let mut app = App::review(tape(), info(), theme());
    app.set_cursor(
        index_of(|e| matches!(e, Event::ModelDelta(ModelDeltaEvent { call_id: 2, .. }))) + 1,
    );
    app.set_focus(Focus::Code);
    app.set_zoom(true);
    let screen = screen(&mut app, 80, 24);
    let top = screen.lines().next().unwrap();
    assert!(
        top.contains(" Code parse_line · the model is reflecting"),
        "{top}"
    );
    for hidden in ["History", "Workflow", "Output", "Task"] {
        assert!(!screen.contains(hidden), "{hidden} is hidden:\n{screen}");
    }
    assert!(
        screen.contains("why: A blank line has no '=', so the split▌"),
        "the reflection streams under the code:\n{screen}"
    );
}

/// The panes Tab visits, from the focus, until it comes back.
fn tab_round(app: &mut App) -> Vec<Focus> {
    let start = app.focus();
    let mut seen = vec![start];
    for _ in 0..Focus::ALL.len() {
        app.update(key(KeyCode::Tab));
        if app.focus() == start {
            break;
        }
        seen.push(app.focus());
    }
    seen
}

/// The registry lays the panes out by where each says it goes on each
/// screen; Tab visits those on screen, zoomed or not, and no other.
#[test]
fn tab_visits_the_panes_each_screen_shows_zoomed_or_not() {
    let at = |n: usize| {
        let mut app = App::review(tape(), info(), theme());
        app.set_cursor(n);
        app.set_focus(Focus::Task);
        app
    };
    let plan = index_of(|e| matches!(e, Event::Plan(_)));
    let mut welcome = App::live(info(), theme());
    welcome.set_focus(Focus::Task);
    let screens = [
        (welcome, vec![Focus::Task, Focus::Welcome]),
        (at(plan), vec![Focus::Task, Focus::Graph, Focus::History]),
        (
            at(plan + 1),
            vec![
                Focus::Task,
                Focus::Graph,
                Focus::Code,
                Focus::Output,
                Focus::History,
            ],
        ),
    ];
    for (mut app, panes) in screens {
        screen(&mut app, 160, 48);
        let on_screen: Vec<Focus> = layout(&app, Rect::new(0, 0, 160, 48))
            .panes
            .iter()
            .map(|(p, _)| *p)
            .collect();
        for pane in &panes {
            assert!(on_screen.contains(pane), "{pane:?} in {on_screen:?}");
        }
        assert_eq!(on_screen.len(), panes.len(), "{on_screen:?}");
        assert_eq!(tab_round(&mut app), panes);
        app.set_zoom(true);
        assert_eq!(tab_round(&mut app), panes, "zoomed");
    }
}
