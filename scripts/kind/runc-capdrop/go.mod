module edgebench/runc-capdrop

go 1.24.0
