//! Experiments: fixed matrices of scenarios, protocols and networks that
//! `quark bench --experiment NAME` runs as one command, with their own
//! results section, table and report section.

pub mod cloud;
pub mod cloud_html;
pub mod cloud_table;
