//! Whether the calling thread serves a reverse-offload request: set by the service
//! thread (`crate::launch::reverse`) around the host function, read by the device's
//! copies (memory the kernel allocated itself may then be named) and by `close`.
//! Thread-local: each thread answers for itself.

thread_local! {
    /// Set while this thread hands a request to libgomp.
    static SERVING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is serving a reverse-offload request (its copies may
/// then name memory the kernel allocated itself).
#[inline]
pub fn serving_request() -> bool {
    SERVING.with(|s| s.get())
}

/// Marks the calling thread as serving a request (`true`) or done (`false`).
#[inline]
pub fn set_serving(on: bool) {
    SERVING.with(|s| s.set(on));
}
