#!/usr/bin/env bash
# Validates deploy/k8s offline (no cluster, no schema download): the checker
# strict-decodes every manifest into k8s.io/api's typed objects (versions
# pinned in deploy/k8s-check/go.mod and go.sum) and checks selectors, ports,
# images, resources, volumes and security settings; its tests break a copy of
# the manifests one way at a time and expect each to be caught.
# Needs Go and the Go module proxy (or a filled module cache).
set -euo pipefail
cd "$(dirname "$0")/k8s-check"
command -v go >/dev/null || { echo "check-k8s: go not found" >&2; exit 1; }
# Never download another Go; go.sum is the truth.
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly
go vet ./...
go test -count=1 ./...
go run . ../k8s
# With kubectl here, also render the kustomization as `kubectl apply -k` would.
if command -v kubectl >/dev/null 2>&1; then
    kubectl kustomize ../k8s >/dev/null
    echo "check-k8s: kubectl kustomize renders deploy/k8s"
fi
