//! The `Loop` of an imported Function, for the tests of loops and their bodies.

use graphlift::ir::control_flow::{ControlFlow, Loop};
use graphlift::{Function, Op};

/// The first `Loop` node of `f`; panics where there is none (each caller's model has one).
pub fn only_loop(f: &Function) -> &Loop {
    f.nodes()
        .find_map(|n| match n.op() {
            Op::ControlFlow(cf) => match &**cf {
                ControlFlow::Loop(l) => Some(l),
                _ => None,
            },
            _ => None,
        })
        .expect("the Function has a Loop")
}
