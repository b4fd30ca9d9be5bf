//! The retrieval quality floor CI relies on (`make eval ... MIN_NDCG=x`, see `.ci/run`): run
//! through make, as CI runs it, on `testdata/eval-floor`, a set whose BM25 NDCG@10 is exactly
//! 0.5. A floor that stopped failing (the flag dropped by the Makefile, the exit status lost)
//! would let a ranking regression land with a green CI.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_wasm_tests::harness::workspace_root;
use std::process::{Command, Output};

fn make_eval(min_ndcg: Option<&str>) -> Output {
    let mut cmd = Command::new("make");
    cmd.current_dir(workspace_root()).args([
        "--no-print-directory",
        "eval",
        "DATA=testdata/eval-floor",
    ]);
    if let Some(x) = min_ndcg {
        cmd.arg(format!("MIN_NDCG={x}"));
    }
    // Under `make test` this runs inside make: the outer make's flags and jobserver are not ours.
    for var in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL"] {
        cmd.env_remove(var);
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("make (is it installed?): {e}"))
}

fn describe(out: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_floor_passes_a_run_at_it_and_fails_one_below_it() {
    let at = make_eval(Some("0.5"));
    assert!(at.status.success(), "at the floor: {}", describe(&at));
    // The set is built so the figure is exact; a different one means the test no longer
    // measures what it says.
    assert!(
        String::from_utf8_lossy(&at.stdout)
            .contains("ranker=bm25 queries=2 R@1=0.500 R@5=0.500 NDCG@10=0.500"),
        "{}",
        describe(&at)
    );

    let below = make_eval(Some("0.51"));
    assert!(
        !below.status.success(),
        "below the floor: {}",
        describe(&below)
    );
    assert!(
        String::from_utf8_lossy(&below.stderr)
            .contains("BM25 NDCG@10 0.5000 is below the floor 0.51"),
        "{}",
        describe(&below)
    );
}

#[test]
fn without_a_floor_the_run_passes_and_a_floor_that_is_not_a_number_fails() {
    let none = make_eval(None);
    assert!(none.status.success(), "no floor: {}", describe(&none));

    let garbage = make_eval(Some("high"));
    assert!(
        !garbage.status.success(),
        "MIN_NDCG=high: {}",
        describe(&garbage)
    );
    assert!(
        String::from_utf8_lossy(&garbage.stderr).contains("--min-ndcg needs a number"),
        "{}",
        describe(&garbage)
    );
}
