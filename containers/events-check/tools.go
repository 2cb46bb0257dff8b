//go:build tools

// Pins the upstream Argo Events CLI (its `lint` command) to the same module version as the renderer, so that
// `go build github.com/argoproj/argo-events/cmd` in this module builds argo-events v1.9.11 from this go.sum.
package main

import _ "github.com/argoproj/argo-events/cmd"
