//! One module per paper: its experiments and its subcommands for users' own data.

pub mod ccm;
pub mod clcb;
pub mod ddm;
pub mod xml;
