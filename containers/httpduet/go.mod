module github.com/edgebench/httpduet

go 1.24.0
