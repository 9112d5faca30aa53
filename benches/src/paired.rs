//! Paired rounds: two or more setups timed one after the other, round after round, so that each sees
//! the same moments of a shared machine.
//!
//! criterion times one bench function after another. On a machine whose speed changes for seconds at
//! a time, two functions can then be measured at different speeds, and the ratio of their times moves
//! by more than the difference being measured. Here every round times each setup once, the order
//! alternating, and the figure reported is the median of the per-round ratios.

use std::time::{Duration, Instant};

use regex::Regex;

/// Criterion options that take a value: the word after one is not a filter.
const VALUE_OPTIONS: &[&str] = &[
    "--sample-size",
    "--warm-up-time",
    "--measurement-time",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--save-baseline",
    "--baseline",
    "--baseline-lenient",
    "--load-baseline",
    "--profile-time",
    "--output-format",
    "--color",
    "--plotting-backend",
    "--format",
    "--logfile",
];

/// Whether the bench's command line selects `name`: no filter given, or the filter (a regular
/// expression, as criterion reads it) matches.
pub fn selected(name: &str) -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    selected_by(&args, name)
}

fn selected_by(args: &[String], name: &str) -> bool {
    let mut filter = None;
    let mut skip = false;
    for arg in args {
        if std::mem::take(&mut skip) {
            continue;
        }
        if arg.starts_with('-') {
            skip = VALUE_OPTIONS.contains(&arg.as_str());
            continue;
        }
        filter = Some(arg);
    }
    match filter {
        None => true,
        Some(filter) => Regex::new(filter)
            .map_or_else(|_| name.contains(filter.as_str()), |re| re.is_match(name)),
    }
}

/// The times of paired rounds, one list per setup, in the order the setups were given.
#[derive(Debug, Clone)]
pub struct Rounds {
    /// The setups' names.
    pub names: Vec<String>,
    /// Each setup's time in each round.
    pub times: Vec<Vec<Duration>>,
}

/// Runs `run` on each setup once per round for `rounds` rounds, the order reversed every other round;
/// `run` returns the time it measured, so that it can leave out what it prepares.
pub fn paired_rounds<S>(
    setups: &mut [(&str, S)],
    rounds: usize,
    mut run: impl FnMut(&mut S) -> Duration,
) -> Rounds {
    let mut times = vec![Vec::with_capacity(rounds); setups.len()];
    for round in 0..rounds {
        let order: Vec<usize> = if round % 2 == 0 {
            (0..setups.len()).collect()
        } else {
            (0..setups.len()).rev().collect()
        };
        for i in order {
            times[i].push(run(&mut setups[i].1));
        }
    }
    Rounds {
        names: setups.iter().map(|(name, _)| (*name).to_owned()).collect(),
        times,
    }
}

/// The time `f` takes.
pub fn timed(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

impl Rounds {
    /// The median time of the setup at `index`.
    pub fn median(&self, index: usize) -> Duration {
        let mut times = self.times[index].clone();
        times.sort();
        times[times.len() / 2]
    }

    /// How much longer setup `index` took than setup `base` in each round, as fractions (`0.05` is
    /// 5% longer), sorted.
    pub fn costs(&self, index: usize, base: usize) -> Vec<f64> {
        let mut costs: Vec<f64> = self.times[index]
            .iter()
            .zip(&self.times[base])
            .map(|(t, b)| t.as_secs_f64() / b.as_secs_f64() - 1.0)
            .collect();
        costs.sort_by(f64::total_cmp);
        costs
    }

    /// One line per setup after the first: its median time and its cost against the first, median
    /// and quartiles of the rounds.
    pub fn report(&self, group: &str) -> String {
        let mut out = format!(
            "{group}: {} paired rounds; {} median {:.1} ms",
            self.times[0].len(),
            self.names[0],
            self.median(0).as_secs_f64() * 1e3
        );
        for index in 1..self.names.len() {
            let costs = self.costs(index, 0);
            let q = |p: f64| costs[((costs.len() - 1) as f64 * p).round() as usize] * 100.0;
            out.push_str(&format!(
                "\n{group}: {} median {:.1} ms; cost against {} per round: median {:+.1}%, quartiles {:+.1}% / {:+.1}%",
                self.names[index],
                self.median(index).as_secs_f64() * 1e3,
                self.names[0],
                q(0.5),
                q(0.25),
                q(0.75),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_filter_is_the_word_that_is_not_an_option_value() {
        assert!(selected_by(&args(&["--bench"]), "replay/x"));
        assert!(selected_by(&args(&["--bench", "^replay/x"]), "replay/x"));
        assert!(!selected_by(&args(&["--bench", "compare"]), "replay/x"));
        assert!(selected_by(
            &args(&["--measurement-time", "5", "--bench"]),
            "replay/x"
        ));
        assert!(!selected_by(
            &args(&["--bench", "--sample-size", "10", "redact"]),
            "replay/x"
        ));
    }

    #[test]
    fn costs_are_taken_round_by_round() {
        let ms = Duration::from_millis;
        let rounds = Rounds {
            names: vec!["a".into(), "b".into()],
            times: vec![
                vec![ms(100), ms(200), ms(100)],
                vec![ms(110), ms(200), ms(150)],
            ],
        };
        let costs = rounds.costs(1, 0);
        assert!((costs[0] - 0.0).abs() < 1e-9);
        assert!((costs[1] - 0.1).abs() < 1e-9);
        assert!((costs[2] - 0.5).abs() < 1e-9);
        assert_eq!(rounds.median(1), ms(150));
        assert!(rounds.report("g").contains("median +10.0%"));
    }
}
