{{/*
Names. With the release named "gpulet" (the chart's name) every object is
named as in deploy/daemonset.yaml: gpulet and gpulet-config.
*/}}
{{- define "gpulet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpulet.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The namespace of every object: namespaceOverride or the release's. A node
daemon in "default" is almost always a forgotten --namespace.
*/}}
{{- define "gpulet.namespace" -}}
{{- $ns := default .Release.Namespace .Values.namespaceOverride -}}
{{- if and (eq $ns "default") (not .Values.allowDefaultNamespace) -}}
{{- fail "namespace: gpulet would be installed into \"default\"; pass --namespace (e.g. kube-system) or set allowDefaultNamespace=true" -}}
{{- end -}}
{{- $ns -}}
{{- end -}}

{{/*
Labels of every object, also the DaemonSet's selector (immutable once
installed): the same two labels as deploy/.
*/}}
{{- define "gpulet.labels" -}}
app.kubernetes.io/name: {{ include "gpulet.name" . }}
app.kubernetes.io/component: device-plugin
{{- end -}}

{{- define "gpulet.image" -}}
{{- printf "%s:%s" .Values.image.repository (toString (.Values.image.tag | default .Chart.AppVersion)) -}}
{{- end -}}

{{- define "gpulet.configMapName" -}}
{{- if .Values.config.name -}}
{{- .Values.config.name -}}
{{- else -}}
{{- printf "%s-config" (include "gpulet.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
The ConfigMap's data when the chart creates it: config.map, or the chart's
own config file as config.yaml.
*/}}
{{- define "gpulet.configData" -}}
{{- if .Values.config.map -}}
{{- toYaml .Values.config.map -}}
{{- else -}}
config.yaml: |
{{- .Files.Get "files/config.yaml" | trim | nindent 2 -}}
{{- end -}}
{{- end -}}

{{/*
"true" when each node picks its configuration by label (config.name, or
several entries in config.map): the whole ConfigMap is then mounted as
gpulet's directory of configurations (CONFIG_FILE_SRCDIR) and gpulet reads
its Node. Empty otherwise: one file, CONFIG_FILE. config.default must be a
key of config.map either way.
*/}}
{{- define "gpulet.perNode" -}}
{{- $c := .Values.config -}}
{{- if and $c.default (not $c.name) $c.map (not (hasKey $c.map $c.default)) -}}
{{- fail (printf "config.default: %q is not a key of config.map (keys: %s)" $c.default (keys $c.map | sortAlpha | join ", ")) -}}
{{- end -}}
{{- if or $c.name (gt (len ($c.map | default dict)) 1) -}}
true
{{- end -}}
{{- end -}}

{{/*
The directory gpulet reads its configurations from, one per node.
*/}}
{{- define "gpulet.configDir" -}}
/etc/gpulet/configs
{{- end -}}

{{/*
The ConfigMap key gpulet reads with one file (config.map has at most one
entry), mounted as /etc/gpulet/config.yaml: config.default, else the only
entry of config.map (config.yaml when the map is empty).
*/}}
{{- define "gpulet.configKey" -}}
{{- $c := .Values.config -}}
{{- $map := $c.map | default (dict "config.yaml" "") -}}
{{- if and $c.default (not (hasKey $map $c.default)) -}}
{{- fail (printf "config.default: %q is not a key of config.map (keys: %s)" $c.default (keys $map | sortAlpha | join ", ")) -}}
{{- end -}}
{{- $c.default | default (keys $map | first) -}}
{{- end -}}

{{/*
The user name of gpulet's service account as the API server sees it, for
the admission policies' match conditions.
*/}}
{{- define "gpulet.serviceAccountUser" -}}
{{- printf "system:serviceaccount:%s:%s" (include "gpulet.namespace" .) (include "gpulet.fullname" .) -}}
{{- end -}}

{{/*
The scheduler extender's objects (extender.enabled): named
<fullname>-extender, labelled as deploy/extender/extender.yaml's.
*/}}
{{- define "gpulet.extenderName" -}}
{{- printf "%s-extender" (include "gpulet.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpulet.extenderLabels" -}}
app.kubernetes.io/name: {{ include "gpulet.name" . }}
app.kubernetes.io/component: scheduler-extender
{{- end -}}

{{- define "gpulet.extenderUser" -}}
{{- printf "system:serviceaccount:%s:%s" (include "gpulet.namespace" .) (include "gpulet.extenderName" .) -}}
{{- end -}}

{{- define "gpulet.extenderTlsSecret" -}}
{{- .Values.extender.tls.secretName | default (printf "%s-tls" (include "gpulet.extenderName" .)) -}}
{{- end -}}

{{/*
The Secret with kube-scheduler's client certificate that the chart
generates beside <name>-extender-tls (extender-tls.yaml).
*/}}
{{- define "gpulet.schedulerClientSecret" -}}
{{- printf "%s-scheduler-client" (include "gpulet.extenderName" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The CEL variables of a policy: the label and annotation keys an update
adds, changes or removes.
*/}}
{{- define "gpulet.changedKeys" -}}
- name: oldLabels
  expression: 'has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}'
- name: newLabels
  expression: 'has(object.metadata.labels) ? object.metadata.labels : {}'
- name: oldAnnotations
  expression: 'has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}'
- name: newAnnotations
  expression: 'has(object.metadata.annotations) ? object.metadata.annotations : {}'
- name: changedLabels
  expression: >-
    variables.newLabels.filter(k, !(k in variables.oldLabels) || variables.oldLabels[k] != variables.newLabels[k]) +
    variables.oldLabels.filter(k, !(k in variables.newLabels))
- name: changedAnnotations
  expression: >-
    variables.newAnnotations.filter(k, !(k in variables.oldAnnotations) || variables.oldAnnotations[k] != variables.newAnnotations[k]) +
    variables.oldAnnotations.filter(k, !(k in variables.newAnnotations))
{{- end -}}
