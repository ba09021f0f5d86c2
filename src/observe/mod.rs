//! Observability that is the same for every product: the profile's aggregation and its
//! table ([`profile`]) and the Chrome trace-event recorder and JSON writer ([`trace`]);
//! the switches are read as settings (`crate::settings`: flags and file names). The products decide what to
//! measure (and with which clock); nothing here calls a driver.
//!
//! Off means off: a product creates these only when its switch is on, so a program
//! that does not ask pays for none of it.

pub mod profile;
pub mod trace;
