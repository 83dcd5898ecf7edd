//! The report: latency percentiles, the rows with their baselines, ratios and targets, and the
//! table printed at the end.

use crate::prelude::*;

#[derive(Clone, Copy)]
pub(crate) struct Lat {
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
}

pub(crate) fn percentiles(mut samples: Vec<Duration>) -> Lat {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    Lat {
        p50: at(0.50),
        p99: at(0.99),
    }
}

pub(crate) fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) value: String,
    pub(crate) baseline: String,
    pub(crate) ratio: String,
    pub(crate) target: String,
    pub(crate) ok: Option<bool>,
}

pub(crate) fn row(
    name: &str,
    value: String,
    baseline: String,
    ratio: String,
    target: &str,
    ok: Option<bool>,
) -> Row {
    Row {
        name: name.to_owned(),
        value,
        baseline,
        ratio,
        target: target.to_owned(),
        ok,
    }
}

/// A reported ratio (no target) of a latency to its baseline, which `what` names.
pub(crate) fn ratio_row(name: &str, measured: Duration, baseline: Duration, what: String) -> Row {
    row(
        name,
        us(measured),
        format!("{} ({what})", us(baseline)),
        format!("{:.2}x", measured.as_secs_f64() / baseline.as_secs_f64()),
        "report",
        None,
    )
}

pub(crate) fn print_table(rows: &[Row]) {
    let header = ["row", "measured", "baseline", "ratio", "target", ""];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            [
                r.name.clone(),
                r.value.clone(),
                r.baseline.clone(),
                r.ratio.clone(),
                r.target.clone(),
                match r.ok {
                    Some(true) => "ok".into(),
                    Some(false) => "MISSED".into(),
                    None => "".into(),
                },
            ]
        })
        .collect();
    let mut w = header.map(|h| h.chars().count());
    for c in &cells {
        for i in 0..6 {
            w[i] = w[i].max(c[i].chars().count());
        }
    }
    let line = |c: [&str; 6]| {
        let mut s = String::from("|");
        for i in 0..6 {
            s.push_str(&format!(
                " {}{} |",
                c[i],
                " ".repeat(w[i] - c[i].chars().count())
            ));
        }
        s
    };
    println!("{}", line(header));
    println!(
        "|{}",
        w.iter()
            .map(|n| format!("{}|", "-".repeat(n + 2)))
            .collect::<String>()
    );
    for c in &cells {
        println!("{}", line([&c[0], &c[1], &c[2], &c[3], &c[4], &c[5]]));
    }
}

// ---------------------------------------------------------------------------------------------
// Row 1: the raw hops
