//! Sampling a session while it runs: its process tree (the CPU it used, its busy children),
//! and the people attached to a tmux session.

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use hyoka_idle_detect::ProcessActivity;
use hyoka_proctrack::{ProcRef, TreeSample};
use tokio::sync::{mpsc, oneshot};

use super::backend::TmuxWatch;
use super::records::Adopted;
use crate::driver::now;
use crate::terminal::TmuxTerminal;

/// How often the session's tree is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// How often a tmux session's clients are counted (people attached).
const PRESENCE_EVERY: Duration = Duration::from_millis(500);

/// Samples the agent's tree (and, for a tracked session, refreshes its ledger first).
pub(super) type Sample = Arc<dyn Fn() -> Option<TreeSample> + Send + Sync>;

/// How the session's tree is sampled: through the tracker (PTY), or from the pane's root
/// (tmux, whose wrapper `sh` is the root and the agent its child).
pub(super) fn sampler(
    tmux: bool,
    adopted: Option<&Adopted>,
    root: Option<ProcRef>,
) -> Option<Sample> {
    match (adopted, root) {
        (Some((_, agent)), _) => {
            let agent = Arc::clone(agent);
            Some(Arc::new(move || {
                let mut agent = agent.lock().unwrap_or_else(PoisonError::into_inner);
                let _ = agent.refresh();
                Some(agent.sample())
            }))
        }
        (None, Some(root)) if tmux => {
            Some(Arc::new(move || hyoka_proctrack::sample_tree(root, 1).ok()))
        }
        (None, _) => None,
    }
}

/// Every half second, samples the session's tree (keeping a tracked session's ledger
/// current on the way) and sends the detector what the tree did since the previous sample:
/// the CPU it used and its busy children, so an agent running a build behind an idle prompt
/// counts as working.
///
/// Stopped through `stop`, never aborted: an aborted task would leave its `/proc` scan
/// running on the blocking pool, still holding the agent, and the teardown that follows
/// needs the agent to itself.
pub(super) fn spawn_refresher(
    sample: Sample,
    activity: mpsc::Sender<ProcessActivity>,
    mut stop: oneshot::Receiver<()>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(SAMPLE_EVERY);
        let mut last: Option<(u64, Instant)> = None;
        loop {
            tokio::select! {
                _ = &mut stop => return,
                _ = every.tick() => {}
            }
            let sample = Arc::clone(&sample);
            let Ok(Some(sampled)) = tokio::task::spawn_blocking(move || sample()).await else {
                continue;
            };
            let at = now();
            if let Some((ticks, then)) = last {
                // Never blocks: a sample the driver has not taken yet is simply superseded.
                let _ = activity.try_send(ProcessActivity {
                    cpu_ticks: sampled.cpu_ticks.saturating_sub(ticks),
                    interval: at.saturating_duration_since(then),
                    busy_children: sampled.busy_children,
                });
            }
            last = Some((sampled.cpu_ticks, at));
        }
    })
}

/// Counts the people attached to a tmux session every half second and tells the driver:
/// every count while someone is attached (each refreshes the human-presence lock), and the
/// first zero after they left.
pub(super) async fn watch_presence(watch: TmuxWatch, presence: mpsc::Sender<u32>) {
    let mut every = tokio::time::interval(PRESENCE_EVERY);
    let mut last = 0;
    loop {
        every.tick().await;
        let Ok(others) =
            TmuxTerminal::others_attached(&watch.socket, &watch.session, watch.client).await
        else {
            continue;
        };
        if (others > 0 || last > 0) && presence.send(others).await.is_err() {
            return;
        }
        last = others;
    }
}
