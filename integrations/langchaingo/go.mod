module github.com/agentsession/session/integrations/langchaingo

go 1.25.0

require (
	github.com/agentsession/session v0.0.0
	github.com/stretchr/testify v1.12.1
	github.com/tmc/langchaingo v0.1.14
)

require (
	github.com/dlclark/regexp2 v1.10.0 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/mattn/go-sqlite3 v1.14.17 // indirect
	github.com/pkoukk/tiktoken-go v0.1.6 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.38.0 // indirect
)

// The root module is developed beside this one; a release tags both.
replace github.com/agentsession/session => ../..
