# Multi-arch images of edgebench. Run from the repository root (contexts are relative to the working directory):
#   docker buildx bake -f containers/docker-bake.hcl --push                  # both images, amd64 + arm64
#   VERSION=0.2.0 REGISTRY=registry.example/edgebench docker buildx bake -f containers/docker-bake.hcl
# Local single-arch build for the kind overlay (edgebench-runner:dev, edgebench-http:dev):
#   docker buildx bake -f containers/docker-bake.hcl --load --set '*.platform=linux/amd64' \
#     --set runner.tags=edgebench-runner:dev --set http-services.tags=edgebench-http:dev

variable "VERSION" {
  default = "0.1.0"
}

variable "EDGEBENCH_COMMIT" {
  # e.g. EDGEBENCH_COMMIT=$(git rev-parse HEAD) docker buildx bake ...; recorded in every run's manifest
  default = "unknown"
}

variable "REGISTRY" {
  default = "ghcr.io/edgebench"
}

group "default" {
  targets = ["runner", "http-services"]
}

target "_common" {
  context   = "."
  platforms = ["linux/amd64", "linux/arm64"]
  labels = {
    "org.opencontainers.image.version" = "${VERSION}"
    "org.opencontainers.image.vendor"  = "edgebench"
  }
}

target "runner" {
  inherits   = ["_common"]
  # the Dockerfile is generated from containers/runner/image.toml (scripts/e2e-argo/images.sh dockerfile)
  dockerfile = "containers/runner/Dockerfile"
  tags       = ["${REGISTRY}/edgebench-runner:${VERSION}"]
  args       = { EDGEBENCH_COMMIT = "${EDGEBENCH_COMMIT}" }
}

target "http-services" {
  inherits   = ["_common"]
  dockerfile = "containers/http-services/Dockerfile"
  tags       = ["${REGISTRY}/edgebench-http:${VERSION}"]
}
