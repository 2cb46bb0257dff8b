module github.com/edgebench/netem-emulator

go 1.24.0

require (
	github.com/florianl/go-nfqueue/v2 v2.1.0
	github.com/mdlayher/netlink v1.9.0
	golang.org/x/sys v0.41.0
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/mdlayher/socket v0.5.1 // indirect
	golang.org/x/net v0.50.0 // indirect
	golang.org/x/sync v0.19.0 // indirect
)
