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
one of ours (docs/install.md "Next to ACK's eRDMA controller"). Ours are empty in values.yaml, so
"was it set?" never depends on the value: the one given wins, the two given different fail the
render, neither given is our default. Its top-level keys with no place here are refused with the
key to use. Rendered by erdma-smcr.validate, which every render includes.
*/}}
{{- define "erdma-smcr.ackValue" -}}
{{- $ours := index . 0 -}}{{- $ack := index . 1 -}}{{- $default := index . 2 -}}{{- $conflict := index . 3 -}}
{{- if and (ne $ours "") (ne $ack "") (ne $ours $ack) -}}
{{- fail $conflict -}}
{{- end -}}
{{- coalesce $ours $ack $default -}}
{{- end }}

{{- define "erdma-smcr.driverMode" -}}
{{- $ours := .Values.webhook.clusterProfile.driverMode | default "" | toString -}}
{{- $ack := .Values.agent.preferDriver | default "" | toString -}}
{{- include "erdma-smcr.ackValue" (list $ours $ack "default" (printf "agent.preferDriver (ACK's name) is %s and webhook.clusterProfile.driverMode is %s: they are the same setting, the eRDMA driver mode of the cluster; set one" $ack $ours)) -}}
{{- end }}

{{- define "erdma-smcr.allocation" -}}
{{- $ours := .Values.devices.allocation | default "" | toString -}}
{{- $ack := "" -}}
{{- if kindIs "bool" .Values.agent.allocateAllDevices -}}
{{- $ack = ternary "all" "numa" .Values.agent.allocateAllDevices -}}
{{- end -}}
{{- include "erdma-smcr.ackValue" (list $ours $ack "numa" (printf "agent.allocateAllDevices (ACK's name) is %v and devices.allocation is %s: they are the same setting (true is all, false numa); set one" .Values.agent.allocateAllDevices $ours)) -}}
{{- end }}

{{- define "erdma-smcr.failurePolicy" -}}
{{- $ours := .Values.webhook.failurePolicy | default "" | toString -}}
{{- $ack := .Values.webhookFailurePolicy | default "" | toString -}}
{{- include "erdma-smcr.ackValue" (list $ours $ack "Ignore" (printf "webhookFailurePolicy (ACK's name) is %s and webhook.failurePolicy is %s: they are the same setting; set one" $ack $ours)) -}}
{{- end }}

{{- define "erdma-smcr.timeoutSeconds" -}}
{{- $ours := "" -}}
{{- if kindIs "float64" .Values.webhook.timeoutSeconds -}}{{- $ours = printf "%d" (int .Values.webhook.timeoutSeconds) -}}{{- else if .Values.webhook.timeoutSeconds -}}{{- $ours = toString .Values.webhook.timeoutSeconds -}}{{- end -}}
{{- $ack := "" -}}
{{- if kindIs "float64" .Values.webhookTimeoutSeconds -}}{{- $ack = printf "%d" (int .Values.webhookTimeoutSeconds) -}}{{- else if .Values.webhookTimeoutSeconds -}}{{- $ack = toString .Values.webhookTimeoutSeconds -}}{{- end -}}
{{- include "erdma-smcr.ackValue" (list $ours $ack "5" (printf "webhookTimeoutSeconds (ACK's name) is %s and webhook.timeoutSeconds is %s: they are the same setting; set one" $ack $ours)) -}}
{{- end }}

{{- define "erdma-smcr.validate" -}}
{{- if hasKey .Values "preferDriver" -}}
{{- fail "preferDriver is not a value of this chart: set webhook.clusterProfile.driverMode (the eRDMA driver mode of the cluster), or agent.preferDriver, ACK's chart's name for it" -}}
{{- end -}}
{{- if hasKey .Values "allocateAllDevices" -}}
{{- fail "allocateAllDevices is not a value of this chart: set devices.allocation (all or numa), or agent.allocateAllDevices, ACK's chart's name for it" -}}
{{- end -}}
{{- /* ACK's chart's own keys (its values.yaml, copied whole by an admin moving over): one message
  names each, with what to set here, so the file is trimmed once. */ -}}
{{- $ack := list -}}
{{- $where := dict
  "controller" "none: there is no controller here (and no cloud credentials)"
  "credentials" "none: the agent reads the instance metadata service, no AccessKey"
  "serviceAccount" "none: fixed names"
  "podAnnotations" "none"
  "affinity" "nodeSelector (the eRDMA node label)"
  "resources" "none: the DaemonSets' requests are fixed (docs/install.md \"What each eRDMA node pays\")"
  "nameOverride" "none: fixed names, one release per cluster"
  "fullnameOverride" "none: fixed names, one release per cluster"
  "config" "config.enableDevicePlugin is devices.path; config.smcInitImage is image.* (the preload init container runs the chart's image); the rest has none" -}}
{{- range $k := keys $where | sortAlpha -}}
{{- if hasKey $.Values $k -}}{{- $ack = append $ack (printf "%s (here: %s)" $k (get $where $k)) -}}{{- end -}}
{{- end -}}
{{- $agentWhere := dict
  "image" "image.*, one image for every component"
  "imagePullSecrets" "imagePullSecrets"
  "nameOverride" "none: fixed names"
  "fullnameOverride" "none: fixed names" -}}
{{- range $k := keys $agentWhere | sortAlpha -}}
{{- if hasKey $.Values.agent $k -}}{{- $ack = append $ack (printf "agent.%s (here: %s)" $k (get $agentWhere $k)) -}}{{- end -}}
{{- end -}}
{{- if $ack -}}
{{- fail (printf "values of ACK's eRDMA controller chart that have no place in this one: %s. Remove them (docs/install.md \"ACK's values in this chart\"); the ACK names taken here as they are: agent.preferDriver, agent.allocateAllDevices, webhookFailurePolicy, webhookTimeoutSeconds" (join "; " $ack)) -}}
{{- end -}}
{{- if and (hasKey .Values "tolerations") (not .Values.tolerations) -}}
{{- fail "tolerations is empty: the node DaemonSets (agent, device plugin, DRA driver) would run on no tainted eRDMA node, and pods there would get no aliyun/erdma and no SMC. Leave tolerations out for the default (every taint: operator Exists), or list the taints to tolerate. (ACK's values file has tolerations: [], for its own agent.)" -}}
{{- end -}}
{{- if not .Values.nodeSelector -}}
{{- fail "nodeSelector is empty: the node DaemonSets would run on every node, eRDMA or not. Leave nodeSelector out for the default (smcr.erdma.io/erdma-node: \"true\"), or name your eRDMA node pool's label (on a cluster of eRDMA nodes only: kubernetes.io/os: linux). (ACK's values file has nodeSelector: {}, for its own agent.)" -}}
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
