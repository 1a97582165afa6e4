//! The stub over real HTTP on loopback: streams, state, errors, several conversations.
//!
//! `support` holds a minimal HTTP/1.1 client over a `TcpStream` (the stub's own crates
//! include no client, and a test needs no more than one request per connection).

mod serve;
mod support;
