//go:build tools

// Package tools pins the Kubernetes commands that scripts/realk8s builds:
// kube-apiserver, kube-controller-manager and kubectl, all from
// k8s.io/kubernetes at the version in go.mod.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
