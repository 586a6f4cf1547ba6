//! quark and the TLS baselines on aws-lc-rs (`QUARK_CRYPTO=aws-lc-rs`, issue
//! #30): the process-wide choice reaches quark's packet protection and the
//! lab's rustls configurations, and transfers stay byte-exact. One test per
//! binary: the choice is made once per process.

mod common;

use quark::tls::{Crypto, crypto, set_crypto};
use quark_lab::adapter::{Cipher, Request};

#[tokio::test]
async fn quic_and_tcp_tls_transfer_exact_bytes_on_aws_lc_rs() {
    assert_eq!(set_crypto(Crypto::AwsLc), Crypto::AwsLc);
    assert_eq!(crypto(), Crypto::AwsLc);
    let p = Cipher::Aes128Gcm.provider();
    assert!(
        format!("{:?}", p.key_provider).contains("AwsLc"),
        "{:?}",
        p.key_provider
    );
    assert_eq!(p.cipher_suites.len(), 1);
    for proto in ["quic", "tcp+tls"] {
        let common::Pair {
            stats,
            client,
            server: _server,
            ..
        } = common::pair(proto, proto).await;
        let conn = client.connect().await.unwrap();
        // The adapters' clients check every byte against the pattern.
        for (response_len, body_len) in [(1_000_003, 0), (3, 200_001)] {
            conn.request(Request {
                response_len,
                body_len,
            })
            .await
            .unwrap_or_else(|e| panic!("{proto}: {e:#}"));
        }
        conn.close().await.unwrap();
        client.wait_idle().await;
        let s = stats.snapshot();
        assert_eq!(
            (s.requests, s.bytes_out, s.bytes_in, s.errors),
            (2, 1_000_006, 200_001, 0),
            "{proto}"
        );
    }
}
