//! Claude Code hooks (T24–T28): a Stop hook or an idle prompt, confirmed by silence.

use std::time::Instant;

use hyoka_idle_detect::HookEvent;

use super::Machine;
use crate::event::{Checker, Event, State, TimerName};

impl Machine {
    pub(super) fn hook(&mut self, hook: HookEvent, now: Instant) {
        if self.state == State::Stopped {
            return;
        }
        match hook {
            HookEvent::Stop | HookEvent::IdlePrompt
                if !self.state.is_detecting() || self.paused =>
            {
                self.emit(Event::HookReceived {
                    hook,
                    accepted: false,
                });
            }
            HookEvent::Stop => {
                self.emit(Event::HookReceived {
                    hook,
                    accepted: true,
                });
                self.stop_hook_at = Some(now);
                self.stop_hook_contradicted = false;
                self.cancel_check(Checker::Idle, "stop hook");
                self.cancel(TimerName::CompletionConfirm, "stop hook");
                self.cancel(TimerName::PreFilter, "stop hook");
                self.arm(TimerName::HookConfirm, self.config.hook_confirm, now);
            }
            HookEvent::IdlePrompt => {
                self.emit(Event::HookReceived {
                    hook,
                    accepted: true,
                });
                self.idle_prompt_received = true;
                self.cancel_check(Checker::Idle, "idle_prompt hook");
                self.cancel(TimerName::CompletionConfirm, "idle_prompt hook");
                self.cancel(TimerName::PreFilter, "idle_prompt hook");
                self.cancel(TimerName::NoOutputFallback, "idle_prompt hook");
                self.on_idle_confirmed("idle_prompt hook", now);
            }
            HookEvent::PromptSubmitted => {
                // A turn started: a Stop that waited for its confirmation was an earlier
                // turn's. The detector keeps the verdict working until the next Stop.
                self.emit(Event::HookReceived {
                    hook,
                    accepted: true,
                });
                self.stop_hook_at = None;
                self.cancel(TimerName::HookConfirm, "prompt submitted");
            }
            HookEvent::ElicitationDialog => {
                self.emit(Event::HookReceived {
                    hook,
                    accepted: true,
                });
                self.elicitation = true;
                self.cancel(TimerName::AutoAccept, "elicitation dialog");
            }
            HookEvent::PermissionPrompt => {
                // The detector turns this into a blocked(permission) verdict; nothing is
                // ever auto-accepted for it.
                self.emit(Event::HookReceived {
                    hook,
                    accepted: true,
                });
                self.cancel(TimerName::AutoAccept, "permission prompt");
            }
        }
    }

    /// T25, T26. Only output that contradicts the hook aborts it: a working chunk (which
    /// cancels the timer outright) or substantial output other than a prompt redraw
    /// (§5d 111; Codeman aborts on any byte).
    pub(super) fn hook_confirm_fired(&mut self, now: Instant) {
        if !self.state.is_detecting() {
            return;
        }
        if self.stop_hook_contradicted {
            self.reset_hooks();
            self.back_to_watching(now, true);
        } else {
            self.on_idle_confirmed("stop hook (confirmed)", now);
        }
    }
}
