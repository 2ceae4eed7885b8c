module github.com/agentsession/session

go 1.25

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/google/uuid v1.6.0
	github.com/klauspost/compress v1.20.3
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.38.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
