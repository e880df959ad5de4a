//! One module per paper: its experiments (the subcommands for users' own data are in
//! `users`).

pub mod ccm;
pub mod clcb;
pub mod ddm;
pub mod scaling;
pub mod xml;

/// Most passes a timing by passes makes over its stream (CCM's indexes, CLCB's grid on all
/// cores and cell index): each series' time is its least over the passes, so that a
/// hiccup of the machine in one pass does not decide a ratio.
pub const MAX_PASSES: usize = 5;

/// Whether a timing by passes passes over its stream again after `passes` passes that
/// took `spent_s` seconds in all, the last `last_s`, covering the whole stream or not
/// (`whole`): not in quick mode, not after a pass the budget cut, at most
/// [`MAX_PASSES`], and only while the next (as long as the last) keeps the total within
/// `budget_s`.
pub fn another_pass(
    quick: bool,
    whole: bool,
    passes: usize,
    (spent_s, last_s): (f64, f64),
    budget_s: f64,
) -> bool {
    !quick && whole && passes < MAX_PASSES && spent_s + last_s <= budget_s
}
