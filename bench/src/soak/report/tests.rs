#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
use super::*;

/// A 100 s run through `write`: the sidecar killed at 45 s and listening again at 65 s;
/// 450 searches 0.1 s apart before the kill (the first `bm25_first` after the first one
/// not hybrid), BM25 while it is down, then one search a second, hybrid from `back` s
/// after the restart; flat memory. Returns the verdict and report.md.
fn run(name: &str, bm25_first: usize, back: u64) -> (bool, String) {
    let t0 = Instant::now();
    let at = |s: f64| t0 + Duration::from_secs_f64(s);
    let dir = std::env::temp_dir().join(format!("soak-report-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let args = Args {
        catalog_server: "cs".into(),
        seconds: 100,
        conns: 12,
        think: Duration::from_millis(50),
        sample: Duration::from_secs(5),
        tools: 120,
        catalog_every: Duration::from_secs(30),
        embedder_every: Duration::from_secs(90),
        embedder_down: Duration::from_secs(20),
        upstream_every: Duration::from_secs(120),
        upstream_down: Duration::from_secs(15),
        out_dir: dir.clone(),
        benchmarks: None,
    };
    let search = |s: f64, hybrid: bool| Record {
        kind: Kind::Search,
        upstream: 0,
        start: at(s),
        end: at(s + 0.001),
        outcome: Outcome::Ok {
            strategy: Some(if hybrid {
                "hybrid".to_owned()
            } else {
                "bm25 (fallback: circuit_open)".to_owned()
            }),
            candidates: Some(120),
            embedded: hybrid.then_some(120),
        },
        session_opened: None,
    };
    let mut records: Vec<Record> = (0..450)
        .map(|i| search(0.1 * i as f64, i == 0 || i > bm25_first))
        .collect();
    records.extend((0..200).map(|i| search(45.0 + 0.1 * i as f64, false)));
    records.extend((0..35).map(|i| search(65.0 + i as f64, i >= back)));
    let events = [
        Event {
            at: at(45.0),
            what: What::EmbedderDown,
        },
        Event {
            at: at(65.0),
            what: What::EmbedderUp,
        },
    ];
    let samples: Vec<Sample> = (0..=20)
        .map(|i| Sample {
            at: Duration::from_secs(5 * i),
            rss_kb: Some(100_000),
            vms: vec![(0x1000, 2 << 20), (0x2000, 2 << 20)],
        })
        .collect();
    let inp = Inputs {
        args: &args,
        load_start: String::new(),
        t0,
        elapsed: Duration::from_secs(100),
        warm_up: String::new(),
        records: &records,
        events: &events,
        samples: &samples,
        stats_before: &[],
        stats_after: &[],
        vm_stats_before: &[],
        vm_stats_after: &[],
        envoy_log: "",
        envoy_alive: true,
        list_changed_seen: vec![0, 0],
        watch_streams: vec![1, 1],
        served: 121,
    };
    let passed = write(&inp).unwrap();
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (passed, report)
}

#[test]
fn the_verdict_fails_on_the_ranking_criteria() {
    // 14 of 485 searches while up not hybrid (97.1%), hybrid back 4 s after the restart.
    let (passed, report) = run("pass", 10, 4);
    assert!(passed, "{report}");
    assert!(report.contains("**Verdict: PASS**"), "{report}");
    assert!(
        report.contains("| searches hybrid while the sidecar is up, from the first hybrid answer (0.0 s) | at least 95% | 97.1% (471 of 485) | PASS |"),
        "{report}"
    );
    assert!(
        report.contains("| within 10 s | 4.0 s | PASS |"),
        "{report}"
    );
    // 54 of 485 not hybrid: 88.9%.
    let (passed, report) = run("share", 50, 4);
    assert!(!passed);
    assert!(
        report.contains("**Verdict: FAIL** (hybrid 88.9% (431 of 485) of the searches made while the sidecar was up, below 95%)"),
        "{report}"
    );
    // Hybrid back 12 s after the restart (97.5% hybrid).
    let (passed, report) = run("recovery", 0, 12);
    assert!(!passed);
    assert!(
        report.contains("hybrid not back within 10 s after 1 of 1 sidecar restarts (12.0 s)"),
        "{report}"
    );
    assert!(
        report.contains("| within 10 s | 12.0 s | **FAIL** |"),
        "{report}"
    );
    // Never back.
    let (passed, report) = run("never", 0, 100);
    assert!(!passed);
    assert!(report.contains("never (before the end)"), "{report}");
}

#[test]
fn trap_lines_are_found() {
    let log = "[warning][wasm] catalog fetch failed: connect\n\
               [critical][wasm] wasm log mcp_tool_search: panicked at src/x.rs:1:1\n\
               [error][wasm] Function: proxy_on_request_body failed: Uncaught RuntimeError: unreachable\n";
    assert_eq!(trap_lines(log).len(), 2);
}
