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
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
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
{{- if or .Values.devices.resources (ne .Values.devices.allocation "numa") .Values.devices.takeOver -}}
agent:
  allocation: {{ .Values.devices.allocation }}
  {{- with .Values.devices.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if .Values.devices.takeOver }}
  takeOverResources: true
  {{- end }}
{{- end -}}
{{- end }}
