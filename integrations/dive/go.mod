module github.com/agentsession/session/integrations/dive

go 1.25.0

// The root module is developed beside this one; a release tags both.
replace github.com/agentsession/session => ../..

require (
	github.com/agentsession/session v0.0.0
	github.com/deepnoodle-ai/dive v1.26.0
	github.com/deepnoodle-ai/wonton v0.0.38
)

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/gobwas/glob v0.2.3 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	golang.org/x/image v0.45.0 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
