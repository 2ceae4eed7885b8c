package session

// Fdatasync exposes the store's sync call to the benchmarks, for the raw
// floor that per-turn syncing is compared with.
var Fdatasync = datasync
