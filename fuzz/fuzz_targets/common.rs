//! What the connection-level targets share: one certificate for the whole
//! run, and two endpoints joined by a lossless, instant network on a
//! simulated clock.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use quark_proto::{ClientConfig, ConnectionHandle, Endpoint, EndpointConfig, ServerConfig};

pub const ALPN: &[u8] = b"hq-interop";
pub const CLIENT: &str = "10.0.0.1:5000";
pub const SERVER: &str = "10.0.0.2:443";

pub struct Tls {
    pub client: Arc<rustls::ClientConfig>,
    pub server: Arc<rustls::ServerConfig>,
}

/// One certificate for the whole run: generating it per input would dominate.
pub fn tls() -> &'static Tls {
    static TLS: OnceLock<Tls> = OnceLock::new();
    TLS.get_or_init(|| {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let cert = ck.cert.der().clone();
        let key: rustls::pki_types::PrivateKeyDer<'static> =
            rustls::pki_types::PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()).into();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.clone()], key)
            .unwrap();
        server.alpn_protocols = vec![ALPN.to_vec()];
        server.max_early_data_size = 0;
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert).unwrap();
        let mut client = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        client.alpn_protocols = vec![ALPN.to_vec()];
        Tls {
            client: Arc::new(client),
            server: Arc::new(server),
        }
    })
}

/// Two endpoints joined by a lossless, instant network on a simulated clock.
pub struct Pair {
    pub now: Instant,
    pub client: Endpoint,
    pub server: Endpoint,
    buf: Vec<u8>,
}

impl Pair {
    pub fn new(server: ServerConfig) -> Self {
        let config = EndpointConfig {
            rng_seed: Some(1),
            ..EndpointConfig::default()
        };
        Pair {
            #[allow(clippy::disallowed_methods)] // the simulated clock's origin
            now: Instant::now(),
            client: Endpoint::new(Arc::new(config.clone()), None),
            server: Endpoint::new(Arc::new(config), Some(Arc::new(server))),
            buf: Vec::new(),
        }
    }

    /// The client starts a connection to the server.
    pub fn connect(&mut self) -> ConnectionHandle {
        let config = ClientConfig::new(tls().client.clone());
        self.client
            .connect(self.now, &config, SERVER.parse().unwrap(), "localhost")
            .unwrap()
    }

    /// Move every datagram either side has to the other; false if none moved.
    pub fn exchange(&mut self) -> bool {
        let mut any = false;
        for to_server in [true, false] {
            let (from, to, src) = if to_server {
                (&mut self.client, &mut self.server, CLIENT)
            } else {
                (&mut self.server, &mut self.client, SERVER)
            };
            let src: SocketAddr = src.parse().unwrap();
            // GSO batches arrive whole, as GRO gives them, and may be lent.
            for (batch, stride) in outgoing_batches(from, self.now, &mut self.buf) {
                any = true;
                let mut d = BytesMut::from(&batch[..]);
                to.handle_batch(self.now, src, None, None, &mut d, stride, true, |_, _| {});
            }
        }
        any
    }

    /// Run until quiet, then let timers due within `d` fire, a bounded number of times.
    pub fn run(&mut self, d: Duration) {
        let end = self.now + d;
        for _ in 0..200 {
            if self.exchange() {
                continue;
            }
            let next = self
                .client
                .handles()
                .filter_map(|h| self.client.connection(h)?.poll_timeout())
                .chain(
                    self.server
                        .handles()
                        .filter_map(|h| self.server.connection(h)?.poll_timeout()),
                )
                .min();
            match next {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    let now = self.now;
                    for ep in [&mut self.client, &mut self.server] {
                        let hs: Vec<_> = ep.handles().collect();
                        for h in hs {
                            ep.handle_timeout(h, now);
                        }
                    }
                }
                _ => break,
            }
        }
        self.now = self.now.max(end);
    }
}

/// Everything `ep` and its connections want to send now, one datagram each
/// (GSO batches cut up). A side that never stops sending is a bug.
pub fn outgoing(ep: &mut Endpoint, now: Instant, buf: &mut Vec<u8>) -> Vec<Vec<u8>> {
    outgoing_batches(ep, now, buf)
        .into_iter()
        .flat_map(|(batch, seg)| batch.chunks(seg).map(<[u8]>::to_vec).collect::<Vec<_>>())
        .collect()
}

/// [`outgoing`], GSO batches whole: each with its segment size.
pub fn outgoing_batches(
    ep: &mut Endpoint,
    now: Instant,
    buf: &mut Vec<u8>,
) -> Vec<(Vec<u8>, usize)> {
    let mut batches = Vec::new();
    while let Some(t) = ep.poll_transmit(buf) {
        batches.push((buf[..t.size].to_vec(), t.size.max(1)));
    }
    let handles: Vec<_> = ep.handles().collect();
    for h in handles {
        while let Some(t) = ep
            .connection_mut(h)
            .and_then(|c| c.poll_transmit(now, 10, buf))
        {
            ep.sync(h);
            let seg = t.segment_size.unwrap_or(t.size).max(1);
            batches.push((buf[..t.size].to_vec(), seg));
            assert!(batches.len() < 100_000, "datagrams do not drain");
        }
    }
    batches
}
