module github.com/edgebench/relay

go 1.24.0
