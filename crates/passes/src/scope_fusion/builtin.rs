//! The built-in scope fusion passes: blocks exporters write out whose fused op the IR
//! already has (so both backends run it with kernels they have).

mod activation;
mod attention;
mod conv_bn_activation;
mod dataflow;
mod layer_norm;
mod softmax;

pub use attention::AttentionPass;
pub use conv_bn_activation::ConvBnActivationPass;
pub use layer_norm::LayerNormPass;
pub use softmax::SoftmaxPass;
