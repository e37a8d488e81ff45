//! The moments of a tape a cursor goes to, and what it looks at there: the
//! node an event shows the engine at work on, where each iteration begins,
//! where the first failure is. A cursor is a count of records folded (0:
//! none). The workbench's timeline and the browser's player both read
//! these, so their cursors and the node they follow agree.

use super::event::*;

/// The node an event shows the engine at work on, if any (a node blocked
/// by another's failure is not being worked on).
pub fn active_node(event: &Event) -> Option<&str> {
    event.facts().about.node_at_work()
}

/// The node the engine touched last in `records`.
pub fn active_at(records: &[Record]) -> Option<&str> {
    records.iter().rev().find_map(|r| active_node(&r.event))
}

/// The cursor of the next (or previous) iteration from `cursor`: just
/// after a new code version of some node, strictly after (before) the
/// cursor.
pub fn iteration_from(records: &[Record], cursor: usize, forward: bool) -> Option<usize> {
    let is_code = |r: &Record| matches!(r.event, Event::Code(_));
    if forward {
        records
            .get(cursor..)?
            .iter()
            .position(is_code)
            .map(|i| cursor + i + 1)
    } else {
        // The cursor may sit just after a code record: that one is skipped.
        let before = cursor.saturating_sub(1).min(records.len());
        records[..before].iter().rposition(is_code).map(|i| i + 1)
    }
}

/// The cursor of the first failure: after the first failed run and the
/// localization that follows it (within a few records), or after the
/// first localization if it comes first.
pub fn first_failure(records: &[Record]) -> Option<usize> {
    let first = records.iter().position(|r| {
        matches!(&r.event, Event::Localized(_))
            || matches!(&r.event, Event::RunFinished(e) if !e.record.passed)
    })?;
    let localized = records[first + 1..]
        .iter()
        .take(6)
        .position(|r| matches!(r.event, Event::Localized(_)));
    Some(match localized {
        Some(k) => first + 1 + k + 1,
        None => first + 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, event: Event) -> Record {
        Record {
            seq,
            t_ms: seq,
            event,
        }
    }

    fn notice() -> Event {
        Event::Notice(NoticeEvent {
            level: NoticeLevel::Info,
            message: "n".into(),
        })
    }

    fn code(node: &str) -> Event {
        Event::Code(CodeEvent {
            node: node.into(),
            iteration: 1,
            code: String::new(),
            source: CodeSource::Model,
            notes: Vec::new(),
        })
    }

    #[test]
    fn iterations_are_the_moments_just_after_a_code_version() {
        let records: Vec<Record> = [notice(), code("a"), notice(), code("b"), notice()]
            .into_iter()
            .enumerate()
            .map(|(i, e)| record(i as u64, e))
            .collect();
        assert_eq!(iteration_from(&records, 0, true), Some(2));
        assert_eq!(iteration_from(&records, 2, true), Some(4));
        assert_eq!(iteration_from(&records, 4, true), None);
        assert_eq!(iteration_from(&records, 5, false), Some(4));
        assert_eq!(iteration_from(&records, 4, false), Some(2));
        assert_eq!(iteration_from(&records, 3, false), Some(2));
        assert_eq!(iteration_from(&records, 2, false), None);
        assert_eq!(iteration_from(&records, 9, true), None);
        assert_eq!(active_at(&records), Some("b"));
        assert_eq!(active_at(&records[..2]), Some("a"));
        assert_eq!(first_failure(&records), None);
    }
}
