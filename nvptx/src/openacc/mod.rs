//! OpenACC on the nvptx device: kernel launches with gang/worker/vector dimensions,
//! async queues, per-thread data, device properties and the CUDA interop calls; the
//! tuner of the gang counts the runtime chooses.

pub mod dims;
pub mod exec;
pub mod gang_tuner;
pub mod property;
pub mod queue;
pub mod thread;
