//! Measurements (to be written).
