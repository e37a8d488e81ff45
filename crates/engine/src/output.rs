//! A run's output on its way to the tape, gathered: the sandbox hands it
//! over as its pipes are read, in pieces as small as a few bytes when the
//! program writes faster than it is read (a million-line flood comes in
//! tens of thousands), and each piece on the tape is a record the tape,
//! the workbench's timeline and a reader hold. So the pieces that arrive
//! within `GATHER_WAIT` of the first, of one stream, go on the tape as one
//! (up to `GATHER_BYTES`): a few records a second at most, the output a
//! frame later than it came at worst. `cargo bench --bench tui`'s flood
//! forwards its output through this too.

use std::time::Duration;

use tokio::sync::mpsc;

use codeloop_sandbox::OutputChunk;

/// How long pieces are gathered after the first (a frame's time).
pub const GATHER_WAIT: Duration = Duration::from_millis(20);
/// The most output gathered into one piece.
pub const GATHER_BYTES: usize = 64 << 10;

/// The next pieces of output, gathered: `None` when the run's output
/// ended. Pieces of one stream in a row are joined (each at most
/// `GATHER_BYTES`); a piece of the other stream starts another, so the
/// streams keep their order.
pub async fn gather(rx: &mut mpsc::Receiver<OutputChunk>) -> Option<Vec<OutputChunk>> {
    let first = rx.recv().await?;
    let deadline = tokio::time::Instant::now() + GATHER_WAIT;
    let mut out = vec![first];
    let mut total = out[0].text.len();
    while total < 4 * GATHER_BYTES {
        let next = match rx.try_recv() {
            Ok(chunk) => chunk,
            Err(mpsc::error::TryRecvError::Disconnected) => break,
            Err(mpsc::error::TryRecvError::Empty) => {
                match tokio::time::timeout_at(deadline, rx.recv()).await {
                    Ok(Some(chunk)) => chunk,
                    Ok(None) | Err(_) => break,
                }
            }
        };
        total += next.text.len();
        match out.last_mut() {
            Some(last)
                if last.stream == next.stream
                    && last.text.len() + next.text.len() <= GATHER_BYTES =>
            {
                last.text.push_str(&next.text);
            }
            _ => out.push(next),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use codeloop_protocol::Stream;

    fn piece(stream: Stream, text: &str) -> OutputChunk {
        OutputChunk {
            stream,
            text: text.into(),
        }
    }

    #[tokio::test]
    async fn pieces_that_come_together_go_as_one_and_the_streams_keep_their_order() {
        let (tx, mut rx) = mpsc::channel(64);
        for text in ["a\n", "b\n", "c\n"] {
            tx.send(piece(Stream::Stdout, text)).await.unwrap();
        }
        tx.send(piece(Stream::Stderr, "oops\n")).await.unwrap();
        tx.send(piece(Stream::Stdout, "d\n")).await.unwrap();
        drop(tx);
        let got = gather(&mut rx).await.unwrap();
        let texts: Vec<(Stream, &str)> = got.iter().map(|c| (c.stream, c.text.as_str())).collect();
        assert_eq!(
            texts,
            [
                (Stream::Stdout, "a\nb\nc\n"),
                (Stream::Stderr, "oops\n"),
                (Stream::Stdout, "d\n")
            ]
        );
        assert!(gather(&mut rx).await.is_none(), "the output ended");
    }

    #[tokio::test]
    async fn a_piece_is_never_held_past_the_wait_nor_grown_past_its_size() {
        // The run goes on (its sender open): the piece goes once the wait
        // is over, not when the run ends (which here never comes: the
        // timeout only keeps a wrong gather from hanging the suite).
        let (tx, mut rx) = mpsc::channel(64);
        tx.send(piece(Stream::Stdout, "first\n")).await.unwrap();
        let got = tokio::time::timeout(Duration::from_secs(60), gather(&mut rx))
            .await
            .expect("handed over after the wait, the run still going")
            .unwrap();
        assert_eq!(got.len(), 1);
        drop(tx);
        let (tx, mut rx) = mpsc::channel(64);
        let big = "x".repeat(GATHER_BYTES / 2 + 1);
        for _ in 0..3 {
            tx.send(piece(Stream::Stdout, &big)).await.unwrap();
        }
        drop(tx);
        let got = gather(&mut rx).await.unwrap();
        assert!(got.iter().all(|c| c.text.len() <= GATHER_BYTES));
        assert_eq!(got.len(), 3);
    }
}
