//! Hooks written in Rust, running in the host.

use crate::event::{EventKinds, HookContext, StepEvent};
use crate::flow::Flow;

/// A hook written in Rust, running in the host. Shared by every run.
pub trait Hook: Send + Sync {
    /// The name diagnostics and decisions give it.
    fn name(&self) -> &str;

    /// The event kinds to dispatch to this hook; all by default.
    fn subscriptions(&self) -> EventKinds {
        EventKinds::ALL
    }

    /// Decides what to do at one step; checked against the event's rule like a guest's answer.
    fn on_event(&self, ctx: &HookContext, event: &StepEvent) -> Flow;
}

/// A [`Hook`] made of a name and a closure.
pub struct FnHook<F> {
    name: String,
    f: F,
}

/// Makes a native hook from a closure: `hook_fn("deny-shell", |_, _| Flow::Continue)`.
pub fn hook_fn<F>(name: impl Into<String>, f: F) -> FnHook<F>
where
    F: Fn(&HookContext, &StepEvent) -> Flow + Send + Sync,
{
    FnHook {
        name: name.into(),
        f,
    }
}

impl<F> Hook for FnHook<F>
where
    F: Fn(&HookContext, &StepEvent) -> Flow + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn on_event(&self, ctx: &HookContext, event: &StepEvent) -> Flow {
        (self.f)(ctx, event)
    }
}
