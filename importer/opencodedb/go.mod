module github.com/agentsession/session/importer/opencodedb

go 1.25.0

require (
	github.com/agentsession/session v0.0.0
	modernc.org/sqlite v1.58.0
)

require (
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/sys v0.47.0 // indirect
	modernc.org/libc v1.76.0 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)

// A module of its own so that its SQLite driver never becomes a
// dependency of the library (see doc.go). It replaces the library by
// path, so that it builds on its own too (GOWORK=off).
replace github.com/agentsession/session => ../../
