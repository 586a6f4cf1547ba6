//! quark and the TLS baselines on aws-lc-rs (`QUARK_CRYPTO=aws-lc-rs`, issue
//! #30): the process-wide choice reaches quark's packet protection and the
//! lab's rustls configurations, and transfers stay byte-exact. One test per
//! binary: the choice is made once per process.

use std::sync::Arc;

use quark::tls::{Crypto, crypto, set_crypto};
use quark_lab::adapter::{Cipher, ClientConfig, Identity, Request, ServeConfig, ServerStats, find};

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
        let adapter = find(proto).unwrap();
        let identity = Identity::generate().unwrap();
        let stats = Arc::new(ServerStats::default());
        let server = adapter
            .serve(ServeConfig {
                listen: "127.0.0.1:0".parse().unwrap(),
                identity: identity.clone(),
                cipher: Cipher::Aes128Gcm,
                stats: stats.clone(),
                workers: None,
            })
            .await
            .unwrap();
        let client = adapter
            .client(ClientConfig {
                server: server.local_addr(),
                cert: identity.cert.clone(),
                cipher: Cipher::Aes128Gcm,
                sockets: 1,
            })
            .await
            .unwrap();
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
