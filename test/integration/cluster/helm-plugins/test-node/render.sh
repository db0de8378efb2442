#!/bin/sh
# stdin: the chart as helm rendered it; stdout: the same with the test node's patches.
set -eu
kubectl=$1
patches=$2
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cat >"$d/rendered.yaml"
cp "$patches/host-paths.yaml" "$patches/device-plugin-paths.yaml" "$patches/agent-config.yaml" "$d/"
cat >"$d/kustomization.yaml" <<KUSTOMIZATION
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [rendered.yaml, agent-config.yaml]
patches:
  - target: { group: apps, version: v1, kind: DaemonSet, name: erdma-smcr-agent }
    path: host-paths.yaml
  - target: { group: apps, version: v1, kind: DaemonSet, name: erdma-smcr-device-plugin }
    path: device-plugin-paths.yaml
KUSTOMIZATION
"$kubectl" kustomize "$d"
