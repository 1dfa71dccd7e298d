//go:build tools

// Package tools pins kwok, which scripts/realk8s builds to give the test
// control plane fake nodes and pod status.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
