//! The names a file takes from the 1.x SDK.
