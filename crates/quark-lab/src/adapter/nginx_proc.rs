//! The nginx process behind the `nginx` adapter: its directory (config,
//! certificate, pattern file), start and stop, its CPU time and the access
//! log that feeds the server counters.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use super::tls::{Cipher, Identity};
use super::{ServerStats, client_bind};
use crate::wire::pattern_slice;

/// Bytes the client asks for per range request. A response longer than this
/// is several range requests on one connection.
pub(super) const SPAN: u64 = 16 << 20;

/// The pattern file holds `SPAN` bytes plus one pattern period, so a span
/// starting at any response offset is one range of it (byte `i` is `i % 251`).
const FILE_LEN: u64 = SPAN + 251;

/// The nginx program: `QUARK_NGINX` or `nginx` on the PATH.
pub(super) fn program() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("QUARK_NGINX").map(PathBuf::from) {
        return match p.is_file() {
            true => Ok(p),
            false => Err(format!("QUARK_NGINX={}: no such program", p.display())),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "nginx is not installed (apt-get install nginx-light, or set QUARK_NGINX)".to_string()
        })
}

/// OpenSSL's name of a TLS 1.3 suite.
fn openssl_suite(c: Cipher) -> &'static str {
    match c {
        Cipher::Aes128Gcm => "TLS_AES_128_GCM_SHA256",
        Cipher::Aes256Gcm => "TLS_AES_256_GCM_SHA384",
        Cipher::Chacha20 => "TLS_CHACHA20_POLY1305_SHA256",
    }
}

/// The configuration file for one server.
pub(super) fn config(dir: &Path, listen: SocketAddr, workers: usize, cipher: Cipher) -> String {
    let d = dir.display();
    format!(
        "worker_processes {workers};
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    default_type application/octet-stream;
    log_format lab '$connection_requests $args $body_bytes_sent $status';
    access_log {d}/access.log lab;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    server {{
        listen {listen} ssl;
        ssl_certificate {d}/cert.pem;
        ssl_certificate_key {d}/key.pem;
        ssl_protocols TLSv1.3;
        ssl_conf_command Ciphersuites {suite};
        root {d}/www;
    }}
}}
",
        suite = openssl_suite(cipher)
    )
}

/// Writes the directory nginx serves from.
fn prepare(dir: &Path, identity: &Identity) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir.join("www"))?;
    let cert = pem::Pem::new("CERTIFICATE", identity.cert.to_vec());
    let key = pem::Pem::new("PRIVATE KEY", identity.key.secret_pkcs8_der().to_vec());
    std::fs::write(dir.join("cert.pem"), pem::encode(&cert))?;
    std::fs::write(dir.join("key.pem"), pem::encode(&key))?;
    let mut data = Vec::with_capacity(FILE_LEN as usize);
    let mut off = 0;
    while off < FILE_LEN {
        let s = pattern_slice(off, (FILE_LEN - off) as usize);
        data.extend_from_slice(s);
        off += s.len() as u64;
    }
    std::fs::write(dir.join("www/pattern"), data)?;
    std::fs::write(dir.join("www/empty"), b"")?;
    Ok(())
}

/// A free TCP port on `ip` (nginx cannot report the port it bound to).
fn free_port(listen: SocketAddr) -> anyhow::Result<SocketAddr> {
    if listen.port() != 0 {
        return Ok(listen);
    }
    let l = std::net::TcpListener::bind(listen)?;
    Ok(l.local_addr()?)
}

/// A running nginx; dropping it stops nginx and removes its directory.
pub(super) struct Nginx {
    pub(super) addr: SocketAddr,
    dir: PathBuf,
    master: u32,
    // Its stdin: closing it makes the wrapper shell stop nginx, also when
    // this process dies without running Drop.
    wrapper: Child,
    log: Arc<Mutex<LogTail>>,
    tail: JoinHandle<()>,
}

impl Nginx {
    /// Starts nginx serving on `listen` with `workers` worker processes.
    pub(super) async fn start(
        listen: SocketAddr,
        identity: &Identity,
        cipher: Cipher,
        workers: usize,
        stats: Arc<ServerStats>,
    ) -> anyhow::Result<Nginx> {
        let exe = program().map_err(anyhow::Error::msg)?;
        let dir = std::env::temp_dir().join(format!(
            "quark-nginx-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        prepare(&dir, identity).context("writing nginx's files")?;
        let addr = free_port(listen)?;
        std::fs::write(dir.join("nginx.conf"), config(&dir, addr, workers, cipher))?;
        std::fs::write(dir.join("access.log"), b"")?;
        // The shell stops nginx (SIGTERM: its workers go too) when its stdin closes.
        let script = r#""$1" -p "$2" -c "$2/nginx.conf" -e "$2/error.log" & n=$!; echo $n; read _; kill -TERM $n; wait $n"#;
        let mut wrapper = Command::new("sh")
            .args(["-c", script, "sh"])
            .arg(&exe)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting nginx")?;
        let mut out = wrapper.stdout.take().context("no stdout")?;
        let mut line = Vec::new();
        let mut b = [0u8; 1];
        while out.read(&mut b).await? == 1 && b[0] != b'\n' && line.len() < 20 {
            line.push(b[0]);
        }
        let master: u32 = std::str::from_utf8(&line)?.trim().parse()?;
        let log = Arc::new(Mutex::new(LogTail {
            path: dir.join("access.log"),
            pos: 0,
            partial: String::new(),
            stats,
        }));
        let tail = tokio::spawn(tail_log(log.clone()));
        let nginx = Nginx {
            addr,
            dir,
            master,
            wrapper,
            log,
            tail,
        };
        nginx.wait_listening().await?;
        Ok(nginx)
    }

    async fn wait_listening(&self) -> anyhow::Result<()> {
        for _ in 0..500 {
            let sock = match self.addr {
                SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
                SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
            };
            sock.bind(client_bind(self.addr))?;
            if sock.connect(self.addr).await.is_ok() {
                return Ok(());
            }
            if !Path::new(&format!("/proc/{}", self.master)).exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let log = std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default();
        bail!("nginx did not start on {}: {}", self.addr, log.trim())
    }

    /// Counts what nginx logged until now (the tail task lags by up to 2 ms).
    pub(super) fn sync(&self) {
        if let Ok(mut t) = self.log.lock() {
            t.poll();
        }
    }

    /// User and system CPU time so far of nginx's master and workers.
    pub(super) fn cpu(&self) -> (Duration, Duration) {
        let mut total = proc_cpu(self.master).unwrap_or_default();
        if let Ok(rd) = std::fs::read_dir("/proc") {
            for e in rd.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                    continue;
                };
                if let Some((ppid, u, s)) = proc_stat(pid)
                    && ppid == self.master
                {
                    total.0 += u;
                    total.1 += s;
                }
            }
        }
        total
    }
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// /proc/<pid>/stat's utime and stime are in USER_HZ ticks, 100 per second
/// on Linux whatever the kernel's HZ (proc(5), times(2)).
const TICK: Duration = Duration::from_millis(10);

fn proc_cpu(pid: u32) -> Option<(Duration, Duration)> {
    proc_stat(pid).map(|(_, u, s)| (u, s))
}

/// (ppid, user, system) of a process.
fn proc_stat(pid: u32) -> Option<(u32, Duration, Duration)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces: fields count from the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
    let ppid = f.get(1)?.parse().ok()?;
    let ut: u32 = f.get(11)?.parse().ok()?;
    let st: u32 = f.get(12)?.parse().ok()?;
    Some((ppid, TICK * ut, TICK * st))
}

/// Reads nginx's access log from where it left off. A lab request is one or
/// more range requests; the first carries `?first`, so only it counts as a
/// request.
pub(super) struct LogTail {
    path: PathBuf,
    pos: usize,
    partial: String,
    stats: Arc<ServerStats>,
}

impl LogTail {
    /// Counts the lines written since the last call.
    pub(super) fn poll(&mut self) {
        let Ok(text) = std::fs::read(&self.path) else {
            return;
        };
        if text.len() <= self.pos {
            return;
        }
        self.partial
            .push_str(&String::from_utf8_lossy(&text[self.pos..]));
        self.pos = text.len();
        while let Some(i) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=i).collect();
            count_line(&line, &self.stats);
        }
    }
}

async fn tail_log(tail: Arc<Mutex<LogTail>>) {
    loop {
        tokio::time::sleep(Duration::from_millis(2)).await;
        if let Ok(mut t) = tail.lock() {
            t.poll();
        }
    }
}

/// One access-log line: `<connection_requests> <args> <body_bytes> <status>`.
fn count_line(line: &str, stats: &ServerStats) {
    let f: Vec<&str> = line.split_whitespace().collect();
    let [n, args, bytes, status] = f[..] else {
        stats.error();
        return;
    };
    if n == "1" {
        drop(stats.connection());
    }
    let ok = status == "200" || status == "206";
    let bytes: u64 = bytes.parse().unwrap_or(0);
    match (args, ok) {
        ("first", true) => stats.request().finish(0, bytes),
        // A later span of the same lab request: its bytes only.
        (_, true) => stats.more_bytes_out(bytes),
        _ => stats.error(),
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.tail.abort();
        // Closing stdin lets the shell stop nginx; give it a moment so the
        // directory is not pulled from under it.
        drop(self.wrapper.stdin.take());
        for _ in 0..100 {
            if !Path::new(&format!("/proc/{}", self.master)).exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_restricts_tls_and_serves_the_directory() {
        let c = config(
            Path::new("/tmp/x"),
            "127.0.0.1:4433".parse().unwrap(),
            2,
            Cipher::Aes128Gcm,
        );
        assert!(c.contains("listen 127.0.0.1:4433 ssl;"));
        assert!(c.contains("ssl_protocols TLSv1.3;"));
        assert!(c.contains("Ciphersuites TLS_AES_128_GCM_SHA256;"));
        assert!(c.contains("worker_processes 2;"));
        assert!(c.contains("root /tmp/x/www;"));
        let v6 = config(
            Path::new("/d"),
            "[::1]:9".parse().unwrap(),
            1,
            Cipher::Chacha20,
        );
        assert!(v6.contains("listen [::1]:9 ssl;"), "{v6}");
    }

    #[test]
    fn proc_stat_reads_this_process() {
        let (ppid, _, _) = proc_stat(std::process::id()).unwrap();
        assert_eq!(ppid, std::os::unix::process::parent_id());
    }

    #[test]
    fn log_lines_count_lab_requests_and_bytes() {
        let s = ServerStats::default();
        count_line("1 first 100 206\n", &s);
        count_line("2 more 50 206\n", &s);
        count_line("3 first 0 200\n", &s);
        let c = s.snapshot();
        assert_eq!((c.connections, c.requests, c.bytes_out), (1, 2, 150));
        assert_eq!(c.errors, 0);
        count_line("4 first 0 404\n", &s);
        count_line("junk\n", &s);
        assert_eq!(s.snapshot().errors, 2);
    }
}
