//! Test infrastructure: the control-plane fixture and the pod executor.
