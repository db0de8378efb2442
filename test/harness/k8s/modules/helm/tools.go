//go:build tools

// The chart suites' helm: `go build helm.sh/helm/v4/cmd/helm` from this module (build.sh).
package tools

import _ "helm.sh/helm/v4/cmd/helm"
