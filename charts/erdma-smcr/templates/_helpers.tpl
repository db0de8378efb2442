{{/* Labels on every object: the kustomize base's, and Helm's own (app.kubernetes.io/instance etc.). */}}
{{- define "erdma-smcr.labels" -}}
app.kubernetes.io/name: erdma-smcr
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The selector of a component's pods (as the kustomize base's: no release label, so an upgrade keeps it). */}}
{{- define "erdma-smcr.selector" -}}
app.kubernetes.io/name: erdma-smcr
app.kubernetes.io/component: {{ . }}
{{- end }}

{{- define "erdma-smcr.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* Container fields every component shares: image, pull policy. */}}
{{- define "erdma-smcr.imageFields" -}}
image: {{ include "erdma-smcr.image" . }}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{/* Pod fields every component shares. */}}
{{- define "erdma-smcr.podFields" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Environment every component shares (after its own). */}}
{{- define "erdma-smcr.commonEnv" -}}
{{- if ne .Values.logLevel "info" }}
- name: ERDMA_SMCR_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- end }}
{{- end }}

{{/* Node DaemonSets: which nodes, which taints. */}}
{{- define "erdma-smcr.nodePlacement" -}}
nodeSelector:
  kubernetes.io/os: linux
  {{- with .Values.nodeSelector }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Whether the webhooks get matchConditions: the value, or auto by the API server's version. */}}
{{- define "erdma-smcr.matchConditions" -}}
{{- $m := .Values.webhook.matchConditions -}}
{{- if eq (toString $m) "auto" -}}
{{- if semverCompare ">=1.28.0-0" .Capabilities.KubeVersion.Version }}true{{ end -}}
{{- else if $m -}}
true
{{- end -}}
{{- end }}

{{/* The device plugin's configuration file, when a value differs from the agent's defaults. */}}
{{- define "erdma-smcr.deviceConfig" -}}
{{- if or .Values.devices.resources (ne (include "erdma-smcr.allocation" .) "numa") .Values.devices.takeOver -}}
agent:
  allocation: {{ include "erdma-smcr.allocation" . }}
  {{- with .Values.devices.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if .Values.devices.takeOver }}
  takeOverResources: true
  {{- end }}
{{- end -}}
{{- end }}

{{/*
ACK's eRDMA controller's value names (its chart, deploy/helm/values.yaml), each the same setting as
one of ours (docs/install.md "Next to ACK's eRDMA controller"): the ACK name wins over our default,
and the two given different fail the render. Its top-level keys with no place here are refused with
the key to use. Rendered by erdma-smcr.validate, which every render includes.
*/}}
{{- define "erdma-smcr.driverMode" -}}
{{- $ours := .Values.webhook.clusterProfile.driverMode | default "default" -}}
{{- $ack := .Values.agent.preferDriver | default "" -}}
{{- if and $ack (ne $ack $ours) (ne $ours "default") -}}
{{- fail (printf "agent.preferDriver (ACK's name) is %s and webhook.clusterProfile.driverMode is %s: they are the same setting, the eRDMA driver mode of the cluster; set one" $ack $ours) -}}
{{- end -}}
{{- $ack | default $ours -}}
{{- end }}

{{- define "erdma-smcr.allocation" -}}
{{- $ours := .Values.devices.allocation -}}
{{- if kindIs "bool" .Values.agent.allocateAllDevices -}}
{{- $ack := ternary "all" "numa" .Values.agent.allocateAllDevices -}}
{{- if and (ne $ours "numa") (ne $ours $ack) -}}
{{- fail (printf "agent.allocateAllDevices (ACK's name) is %t and devices.allocation is %s: they are the same setting (true is all, false numa); set one" .Values.agent.allocateAllDevices $ours) -}}
{{- end -}}
{{- $ack -}}
{{- else -}}
{{- $ours -}}
{{- end -}}
{{- end }}

{{- define "erdma-smcr.failurePolicy" -}}
{{- $ours := .Values.webhook.failurePolicy -}}
{{- $ack := .Values.webhookFailurePolicy | default "" -}}
{{- if and $ack (ne $ack $ours) (ne $ours "Ignore") -}}
{{- fail (printf "webhookFailurePolicy (ACK's name) is %s and webhook.failurePolicy is %s: they are the same setting; set one" $ack $ours) -}}
{{- end -}}
{{- $ack | default $ours -}}
{{- end }}

{{- define "erdma-smcr.timeoutSeconds" -}}
{{- $ours := int .Values.webhook.timeoutSeconds -}}
{{- if hasKey .Values "webhookTimeoutSeconds" -}}
{{- $ack := int .Values.webhookTimeoutSeconds -}}
{{- if and (ne $ours 5) (ne $ack $ours) -}}
{{- fail (printf "webhookTimeoutSeconds (ACK's name) is %d and webhook.timeoutSeconds is %d: they are the same setting; set one" $ack $ours) -}}
{{- end -}}
{{- $ack -}}
{{- else -}}
{{- $ours -}}
{{- end -}}
{{- end }}

{{- define "erdma-smcr.validate" -}}
{{- if hasKey .Values "preferDriver" -}}
{{- fail "preferDriver is not a value of this chart: set webhook.clusterProfile.driverMode (the eRDMA driver mode of the cluster), or agent.preferDriver, ACK's chart's name for it" -}}
{{- end -}}
{{- if hasKey .Values "allocateAllDevices" -}}
{{- fail "allocateAllDevices is not a value of this chart: set devices.allocation (all or numa), or agent.allocateAllDevices, ACK's chart's name for it" -}}
{{- end -}}
{{- if and .Values.image.tag .Values.image.digest -}}
{{- fail "image.tag and image.digest are both set: the image is pulled by one; set the other empty" -}}
{{- end -}}
{{- /* One install per cluster: its node agents, the aliyun/erdma resource, the CNI chain entry and
  the DRA driver are each node's, not a namespace's, so a second release in another namespace
  would fight the first on every node. Its cluster-wide objects say who installed it (lookup
  reads nothing under helm template). */ -}}
{{- with (lookup "rbac.authorization.k8s.io/v1" "ClusterRole" "" "erdma-smcr-agent") -}}
{{- $a := .metadata.annotations | default dict -}}
{{- $rel := get $a "meta.helm.sh/release-name" -}}
{{- $relNs := get $a "meta.helm.sh/release-namespace" -}}
{{- if not (and (eq $rel $.Release.Name) (eq $relNs $.Release.Namespace)) -}}
{{- $by := ternary (printf "as Helm release %s in namespace %s: upgrade that one (helm upgrade %s -n %s), or uninstall it first" $rel $relNs $rel $relNs) "by kubectl apply (its ClusterRole erdma-smcr-agent has no Helm release): remove that install first (docs/install.md, uninstall)" (ne $rel "") -}}
{{- fail (printf "erdma-smcr is already installed in this cluster %s. One install per cluster: its node agents, the aliyun/erdma resource, the CNI chain entry and the DRA driver belong to each node, not to a namespace" $by) -}}
{{- end -}}
{{- end -}}
{{- end }}
