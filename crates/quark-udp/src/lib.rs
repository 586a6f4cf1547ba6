//! quark-udp (to be written).
