//! The translator: 2026-07-28 requests in, legacy sessions out, pauses in between.
