package opencodedb

// SetMaxRecord sets the cap on a record's data for a test, and returns
// what puts it back.
func SetMaxRecord(n int) (restore func()) {
	old := maxRecord
	maxRecord = n
	return func() { maxRecord = old }
}
