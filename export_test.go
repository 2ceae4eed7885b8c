package session

// Fdatasync exposes the store's sync call to the benchmarks, for the raw
// floor that per-turn syncing is compared with.
var Fdatasync = datasync

// ListReadBytes reports how many bytes of session files listings have
// read so far.
func ListReadBytes() int64 { return listReadBytes.Load() }

// DecodedMessages reports how many entries have been decoded for
// contexts so far.
func DecodedMessages() int64 { return decodedMessages.Load() }
