//! `quark agent`'s control channel in-process: authentication both ways,
//! refusals, the failure lock-out, and that only lab children can start.

use std::net::SocketAddr;

use quark_lab::agent::{AgentOptions, RemoteAgent, serve};

const TOKEN: &[u8] = b"the-right-token-0123456789";

async fn start_agent() -> SocketAddr {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let opts = AgentOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        token: TOKEN.to_vec(),
        // Never run: nothing here asks for a lab child that gets that far.
        exe: "/nonexistent/quark".into(),
    };
    tokio::spawn(serve(opts, move |a| {
        let _ = tx.send(a);
    }));
    rx.await.unwrap()
}

#[tokio::test]
async fn the_right_token_pings_and_probes() {
    let addr = start_agent().await;
    let agent = RemoteAgent::new(addr, TOKEN.to_vec());
    let (host, rtt) = agent.ping(3).await.unwrap();
    assert!(!host.is_empty());
    assert!(rtt >= 0.0);
    // The agent times TCP connects to an address (here: itself).
    let ms = agent.probe(addr, 3).await.unwrap();
    assert_eq!(ms.len(), 3);
}

#[tokio::test]
async fn only_lab_children_can_start() {
    let addr = start_agent().await;
    let agent = RemoteAgent::new(addr, TOKEN.to_vec());
    for sub in ["sh", "serve", "bench", "../lab-server"] {
        let err = agent
            .spawn(sub, &["-c".into(), "true".into()], b"cert", None, |_| {})
            .await
            .err()
            .unwrap_or_else(|| panic!("{sub} started"));
        assert!(
            format!("{err:#}").contains("only lab-server and lab-client"),
            "{err:#}"
        );
    }
    let err = agent
        .spawn(
            "lab-server",
            &["--cert=/etc/shadow".into()],
            b"c",
            None,
            |_| {},
        )
        .await
        .err()
        .unwrap();
    assert!(format!("{err:#}").contains("separate values"), "{err:#}");
}

#[tokio::test]
async fn a_wrong_token_is_refused_and_repeated_failures_lock_out() {
    let addr = start_agent().await;
    let wrong = RemoteAgent::new(addr, b"not-the-token-0123456789".to_vec());
    let err = wrong.ping(1).await.unwrap_err();
    assert!(
        format!("{err:#}").contains("authentication failed"),
        "{err:#}"
    );
    // Nine more failures at once fill the minute's allowance ...
    let mut tries = Vec::new();
    for _ in 0..9 {
        let w = wrong.clone();
        tries.push(tokio::spawn(async move { w.ping(1).await.is_err() }));
    }
    for t in tries {
        assert!(t.await.unwrap());
    }
    // ... and then even the right token is refused for the rest of it.
    let right = RemoteAgent::new(addr, TOKEN.to_vec());
    let err = right.ping(1).await.unwrap_err();
    assert!(format!("{err:#}").contains("too many failed"), "{err:#}");
}
