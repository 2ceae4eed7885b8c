module github.com/agentsession/session/integrations/genkit

go 1.25.0

// The root module and pgstore (which the tests use) are developed beside
// this one; a release tags them all.
replace (
	github.com/agentsession/session => ../..
	github.com/agentsession/session/pgstore => ../../pgstore
)

require (
	github.com/agentsession/session v0.0.0
	github.com/agentsession/session/pgstore v0.0.0
	github.com/firebase/genkit/go v1.4.0
	github.com/jackc/pgx/v5 v5.12.0
)

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.38.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
