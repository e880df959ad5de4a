//! One module per paper: its experiments (the subcommands for users' own data are in
//! `users`).

pub mod ccm;
pub mod clcb;
pub mod ddm;
pub mod scaling;
pub mod xml;
