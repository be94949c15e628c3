//! The registry of scope fusion passes by name (CANN's `ScopeFusionPassRegistry`): built-in
//! and user passes in registration order, each enabled or disabled by name through the API
//! or the `GRAPHLIFT_DISABLE_SCOPE_PASSES` environment variable (read by
//! [`crate::PassManager::from_env_with_scope_fusion`], never inside a pass).

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use super::builtin;
use super::pass::ScopeBasePass;
use crate::PassError;

/// The environment variable naming scope fusion passes to disable, comma-separated
/// (`GRAPHLIFT_DISABLE_SCOPE_PASSES=layer_norm,softmax`).
pub const DISABLE_SCOPE_PASSES_ENV: &str = "GRAPHLIFT_DISABLE_SCOPE_PASSES";

/// Scope fusion passes by name, in registration order (the order they match in), and the
/// names switched off. Cloning shares the passes.
#[derive(Clone, Default)]
pub struct ScopeFusionRegistry {
    passes: Vec<Arc<dyn ScopeBasePass>>,
    disabled: BTreeSet<String>,
    /// Names the environment disabled that no registered pass has (reported, not errors).
    unknown: BTreeSet<String>,
}

impl fmt::Debug for ScopeFusionRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopeFusionRegistry")
            .field("passes", &self.pass_names())
            .field("disabled", &self.disabled)
            .field("unknown", &self.unknown)
            .finish()
    }
}

impl ScopeFusionRegistry {
    /// No passes.
    pub fn empty() -> ScopeFusionRegistry {
        ScopeFusionRegistry::default()
    }

    /// The built-in passes, all enabled: `layer_norm` (LayerNorm written out, to
    /// `Op::LayerNorm`), `softmax` (Softmax written out, to `Op::Softmax`), then `attention`
    /// (multi-head self-attention written out, to `Op::Attention`; it matches the enclosing
    /// scope, so by the outermost-wins rule it takes a Softmax written out inside it), then
    /// `conv_bn_activation` (Conv + BatchNormalization + activation, to the folded form
    /// the native convolution runs with its activation as an epilogue).
    pub fn builtin() -> ScopeFusionRegistry {
        let mut r = ScopeFusionRegistry::empty();
        r.register(Arc::new(builtin::LayerNormPass))
            .register(Arc::new(builtin::SoftmaxPass))
            .register(Arc::new(builtin::AttentionPass))
            .register(Arc::new(builtin::ConvBnActivationPass));
        r
    }

    /// Registers `pass`. A pass of the same name is replaced in place (keeping its
    /// position, so a user pass takes a built-in one's turn); otherwise it goes last.
    pub fn register(&mut self, pass: Arc<dyn ScopeBasePass>) -> &mut ScopeFusionRegistry {
        match self
            .passes
            .iter()
            .position(|p| p.pass_name() == pass.pass_name())
        {
            Some(i) => self.passes[i] = pass,
            None => self.passes.push(pass),
        }
        self.unknown
            .retain(|n| self.passes.iter().all(|p| p.pass_name() != n));
        self
    }

    /// The passes' names in registration order.
    pub fn pass_names(&self) -> Vec<&str> {
        self.passes.iter().map(|p| p.pass_name()).collect()
    }

    /// The registered passes in registration order, each with whether it is enabled.
    pub fn passes(&self) -> impl Iterator<Item = (&Arc<dyn ScopeBasePass>, bool)> {
        self.passes
            .iter()
            .map(|p| (p, !self.disabled.contains(p.pass_name())))
    }

    /// Switches off the pass `name`.
    ///
    /// # Errors
    /// [`PassError::UnknownPass`] listing the registered names when no pass has `name`.
    pub fn disable(&mut self, name: &str) -> Result<&mut ScopeFusionRegistry, PassError> {
        self.check_known(name)?;
        self.disabled.insert(name.to_string());
        Ok(self)
    }

    /// Switches the pass `name` back on.
    ///
    /// # Errors
    /// As [`ScopeFusionRegistry::disable`].
    pub fn enable(&mut self, name: &str) -> Result<&mut ScopeFusionRegistry, PassError> {
        self.check_known(name)?;
        self.disabled.remove(name);
        Ok(self)
    }

    /// Whether the pass `name` is registered and enabled.
    pub fn is_enabled(&self, name: &str) -> bool {
        self.pass_names().contains(&name) && !self.disabled.contains(name)
    }

    /// The disabled names, sorted.
    pub fn disabled(&self) -> impl Iterator<Item = &str> {
        self.disabled.iter().map(String::as_str)
    }

    /// Names a [`ScopeFusionRegistry::disable_listed`] list held that no pass has, sorted.
    pub fn unknown_disabled(&self) -> impl Iterator<Item = &str> {
        self.unknown.iter().map(String::as_str)
    }

    /// Disables every name of a comma-separated list (the environment variable's value;
    /// blanks around names ignored). A name no pass has is not an error: it is kept for
    /// reports ([`ScopeFusionRegistry::unknown_disabled`]).
    pub fn disable_listed(&mut self, list: &str) -> &mut ScopeFusionRegistry {
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if self.disable(name).is_err() {
                self.unknown.insert(name.to_string());
            }
        }
        self
    }

    /// [`ScopeFusionRegistry::disable_listed`] with `GRAPHLIFT_DISABLE_SCOPE_PASSES`, when
    /// it is set.
    pub fn disable_from_env(&mut self) -> &mut ScopeFusionRegistry {
        if let Ok(list) = std::env::var(DISABLE_SCOPE_PASSES_ENV) {
            self.disable_listed(&list);
        }
        self
    }

    fn check_known(&self, name: &str) -> Result<(), PassError> {
        if self.pass_names().contains(&name) {
            return Ok(());
        }
        Err(PassError::UnknownPass {
            name: name.to_string(),
            known: self.pass_names().join(", "),
        })
    }
}
