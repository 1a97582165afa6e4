//! Sans-IO detection of whether an interactive agent session is working, idle or blocked.
//!
//! This crate will own the detector: observations in (terminal output, hook events, process
//! activity, user input, AI verdicts, ticks), each with the current time, and a verdict out
//! with the evidence that produced it. Detector profiles are data, and the AI checker traits
//! live here.
