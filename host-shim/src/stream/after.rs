//! What runs after a callback returns: the actions the module asked for during it (a local
//! reply, continue, close), and `proxy_on_queue_ready` for the queues this VM registered.

use crate::abi::to_i32;
use crate::error::ShimError;
use crate::vm::Vm;
use crate::vm_state::After;

impl Vm {
    /// Runs what the module asked for during the last callback (Envoy's after-VM-call actions).
    pub(crate) fn run_after_actions(&mut self) -> Result<(), ShimError> {
        loop {
            let actions = std::mem::take(&mut self.store.data_mut().after);
            if actions.is_empty() {
                return Ok(());
            }
            for action in actions {
                match action {
                    After::LocalReply {
                        context,
                        status,
                        headers,
                        body,
                        details,
                    } => self.local_reply(context, status, headers, body, details)?,
                    After::Continue { context, dir } => self.resume(context, dir)?,
                    After::Close { context } => self.reset(context),
                }
            }
        }
    }

    // Here rather than with the other root-context events (`root`): finishing a stream delivers
    // them too, and delivering them runs the after-VM-call actions above.
    /// Delivers `proxy_on_queue_ready` for every enqueue (by any VM) on a queue this VM
    /// registered. Envoy posts these to the owner's worker; here they run when asked (and
    /// after each driven stream event).
    pub fn deliver_queue_ready(&mut self) -> Result<usize, ShimError> {
        let index = self.index();
        let mine: Vec<(u32, u32)> = {
            let mut store = self.host().lock();
            let mut mine = Vec::new();
            store.queue_ready.retain(|(vm, ctx, token)| {
                if *vm == index {
                    mine.push((*ctx, *token));
                    false
                } else {
                    true
                }
            });
            mine
        };
        for (ctx, token) in &mine {
            if self.store.data().context_exists(*ctx) {
                self.call(
                    "proxy_on_queue_ready",
                    *ctx,
                    &[to_i32(*ctx), to_i32(*token)],
                )?;
                self.run_after_actions()?;
            }
        }
        Ok(mine.len())
    }
}
