//! quark-lab (to be written).
