//! The handle table under reuse and races: a closed handle stays dead after
//! its slot holds a new handle, and lookups racing closes on other threads
//! see either the open handle or `QUARK_ERROR_BAD_HANDLE`, never another
//! handle's object.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use quark_ffi::{QuarkError, call, quark_close, quark_local_port, quark_set_nonblocking};

fn endpoint() -> i64 {
    let ep = call::client(&CString::new("127.0.0.1:0").unwrap(), 0);
    assert!(ep > 0, "client: {} ({ep})", call::strerror(ep));
    ep
}

const BAD: i32 = QuarkError::BadHandle as i32;

#[test]
fn a_reused_slot_gets_a_new_number_and_the_old_one_stays_dead() {
    let first = endpoint();
    assert_eq!(quark_close(first), 0);
    assert_eq!(quark_close(first), BAD, "closed twice");
    let second = endpoint();
    assert_ne!(second, first);
    // The old number fails even while its slot holds `second`.
    assert_eq!(quark_local_port(first), BAD);
    assert_eq!(quark_set_nonblocking(first, 1), BAD);
    assert!(quark_local_port(second) > 0);
    assert_eq!(quark_close(first), BAD);
    assert_eq!(quark_close(second), 0);
    assert_eq!(quark_local_port(second), BAD);
}

#[test]
fn lookups_racing_closes_see_the_handle_or_bad_handle() {
    let current = Arc::new(AtomicI64::new(endpoint()));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (current, stop) = (current.clone(), stop.clone());
            std::thread::spawn(move || {
                // What each lookup that found the handle open gave (a sample).
                let mut seen = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let h = current.load(Ordering::SeqCst);
                    match quark_local_port(h) {
                        BAD => {}
                        p if seen.len() < 100_000 => seen.push((h, p)),
                        _ => {}
                    }
                }
                seen
            })
        })
        .collect();
    // Every handle made, with the port of its endpoint.
    let mut ports = HashMap::new();
    let first = current.load(Ordering::SeqCst);
    ports.insert(first, quark_local_port(first));
    for _ in 0..200 {
        let h = endpoint();
        ports.insert(h, quark_local_port(h));
        let old = current.swap(h, Ordering::SeqCst);
        assert_eq!(quark_close(old), 0);
        assert_eq!(quark_local_port(old), BAD, "closed handle {old:#x}");
    }
    stop.store(true, Ordering::SeqCst);
    let mut found = 0;
    for r in readers {
        for (h, p) in r.join().unwrap() {
            // The port of this handle's own endpoint, never a reused slot's.
            assert_eq!(Some(&p), ports.get(&h), "handle {h:#x}");
            found += 1;
        }
    }
    assert!(found > 0, "no lookup ever found an open handle");
    assert_eq!(quark_close(current.load(Ordering::SeqCst)), 0);
}
