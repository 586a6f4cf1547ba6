//! quark async API (to be written).
