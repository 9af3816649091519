//! Python manifests (placeholder, filled in below).
