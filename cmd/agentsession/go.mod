module github.com/agentsession/session/cmd/agentsession

go 1.25.0

require (
	github.com/agentsession/session v0.0.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

// The CLI is a module of its own so that what it brings (the workspace's
// ignore rules and diffs, and more to come) never becomes a dependency of
// the library. The modules are developed side by side; a release tags
// them all.
replace github.com/agentsession/session => ../../
