//! Fair service among the connections a round touched: round-robin passes,
//! each connection building at most `budget` transmits per pass, so one
//! connection with a full congestion window cannot put its whole window
//! ahead of another's small answer (issue #33). A connection that has little
//! to send is done in the first pass, as before; only the busy ones come
//! round again.

/// What polling one connection once gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Built a transmit; it may have more.
    Built,
    /// Has nothing more to send this round.
    Empty,
    /// The socket is full: stop, this connection not polled.
    Blocked,
}

/// Polls each of `conns` in round-robin passes, at most `budget` times a
/// pass, until each is `Empty`. `again` is scratch space (kept by the caller
/// to reuse its allocation). On `Blocked`, returns the connections not
/// finished: the blocked one first, then those still to come.
pub(crate) fn round_robin<H: Copy>(
    conns: &[H],
    budget: usize,
    again: &mut Vec<H>,
    mut poll: impl FnMut(H) -> Step,
) -> Result<(), Vec<H>> {
    again.clear();
    let budget = budget.max(1);
    // First pass straight over the list: the common case (every connection
    // has a datagram or two) ends here without copying it.
    for (i, &h) in conns.iter().enumerate() {
        match poll_some(h, budget, &mut poll) {
            Step::Built => again.push(h),
            Step::Empty => {}
            Step::Blocked => {
                // The blocked one and those not yet polled go before the ones
                // served in this pass: else a busy connection served first
                // takes what room the socket frees, round after round, and
                // the blocked one never gets its turn.
                let mut rest = conns[i..].to_vec();
                rest.append(again);
                return Err(rest);
            }
        }
    }
    // Later passes over the busy ones, compacted in place.
    while !again.is_empty() {
        let mut kept = 0;
        for i in 0..again.len() {
            let h = again[i];
            match poll_some(h, budget, &mut poll) {
                Step::Built => {
                    again[kept] = h;
                    kept += 1;
                }
                Step::Empty => {}
                Step::Blocked => {
                    let mut rest: Vec<H> = again[i..].to_vec();
                    rest.extend_from_slice(&again[..kept]);
                    again.clear();
                    return Err(rest);
                }
            }
        }
        again.truncate(kept);
    }
    Ok(())
}

/// Polls `h` up to `budget` times: `Built` if it used the whole budget (it
/// may have more), else how it stopped.
fn poll_some<H: Copy>(h: H, budget: usize, poll: &mut impl FnMut(H) -> Step) -> Step {
    for _ in 0..budget {
        match poll(h) {
            Step::Built => {}
            other => return other,
        }
    }
    Step::Built
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `round_robin` over connections with `queued[i]` transmits each;
    /// the order they were built in.
    fn order(queued: &[usize], budget: usize) -> Vec<usize> {
        let mut left = queued.to_vec();
        let mut built = Vec::new();
        let conns: Vec<usize> = (0..queued.len()).collect();
        round_robin(&conns, budget, &mut Vec::new(), |h| {
            if left[h] == 0 {
                return Step::Empty;
            }
            left[h] -= 1;
            built.push(h);
            Step::Built
        })
        .unwrap();
        built
    }

    #[test]
    fn a_full_window_does_not_go_ahead_of_small_answers() {
        // Connection 0 sends at full rate (1 000 transmits queued); 1..=8 each
        // answer a small request. Every small answer is built within the first
        // pass: behind at most one budget of the busy connection's.
        let mut queued = vec![1_000];
        queued.extend([1; 8]);
        let built = order(&queued, 2);
        assert_eq!(built.len(), 1_008, "every transmit built once");
        for small in 1..=8 {
            let at = built.iter().position(|&h| h == small).unwrap();
            assert!(at <= 2 + (small - 1), "answer {small} built {at}th");
        }
        // Two busy connections share the socket: they take turns.
        let built = order(&[100, 100], 1);
        assert!(built.chunks(2).all(|p| p == [0, 1]), "{built:?}");
    }

    #[test]
    fn blocked_returns_the_unfinished_ones_in_order() {
        let conns = [10, 11, 12, 13];
        let mut left = [3, 0, 5, 1];
        let mut polls = 0;
        let rest = round_robin(&conns, 1, &mut Vec::new(), |h| {
            polls += 1;
            if polls == 6 {
                return Step::Blocked;
            }
            let n = &mut left[h - 10];
            if *n == 0 {
                return Step::Empty;
            }
            *n -= 1;
            Step::Built
        })
        .unwrap_err();
        // Pass 1: 10 built, 11 empty, 12 built, 13 built. Pass 2: 10 built,
        // then blocked at 12; 13 still has to say it is empty, 10 has more.
        assert_eq!(rest, [12, 13, 10]);
        assert_eq!(left, [1, 0, 4, 0]);
        // Blocked in the first pass: the blocked one and every later one,
        // then those served before it.
        let rest = round_robin(&conns, 4, &mut Vec::new(), |h| {
            if h == 12 { Step::Blocked } else { Step::Built }
        })
        .unwrap_err();
        assert_eq!(rest, [12, 13, 10, 11]);
    }
}
