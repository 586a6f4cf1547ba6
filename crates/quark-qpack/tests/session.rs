//! Compression on a browsing session (`examples/browsing_session/session_data.rs`): the
//! dynamic table must shrink header bytes on the wire well below the static
//! table's, counting the encoder and decoder streams, with every section
//! decoding to what was sent (checked inside `run`).

#[path = "../examples/browsing_session/session_data.rs"]
mod session_data;

#[test]
fn dynamic_table_shrinks_a_browsing_session() {
    let n = session_data::len();
    let waves = [1, 10, 10, 9];
    for make in [session_data::request, session_data::response] {
        let sets: Vec<_> = (0..n).map(make).collect();
        let stat = session_data::run(0, &sets, &waves);
        assert_eq!((stat.encoder, stat.decoder), (0, 0));
        let dynamic = session_data::run(4096, &sets, &waves);
        let total = dynamic.sections + dynamic.encoder + dynamic.decoder;
        assert!(total * 2 < stat.sections, "{dynamic:?} against {stat:?}");
    }
}
