//! `quark lab-server` and `quark lab-client`: the processes `quark bench` drives.

/// Runs a lab server; returns the exit code.
pub(crate) fn server(args: quark_lab::child::ServerArgs) -> i32 {
    quark_lab::child::run_server(args)
}

/// Runs a lab client; returns the exit code.
pub(crate) fn client(args: quark_lab::child::ClientArgs) -> i32 {
    quark_lab::child::run_client(args)
}
