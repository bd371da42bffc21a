{{/* Name of the chart, or nameOverride. */}}
{{- define "mysqlfleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of the release's objects: fullnameOverride, else the release name if it contains the chart's name,
else "<release>-<chart>". Truncated to 63 characters, the limit of a label value and of many names.
*/}}
{{- define "mysqlfleet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* helm.sh/chart label: chart name and version. */}}
{{- define "mysqlfleet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object of the release. */}}
{{- define "mysqlfleet.labels" -}}
helm.sh/chart: {{ include "mysqlfleet.chart" . }}
app.kubernetes.io/name: {{ include "mysqlfleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: mysqlfleet
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the manager's Pods. They are immutable in a Deployment's selector: never change them. */}}
{{- define "mysqlfleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mysqlfleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{/* Labels of the manager's objects. */}}
{{- define "mysqlfleet.managerLabels" -}}
{{ include "mysqlfleet.labels" . }}
app.kubernetes.io/component: manager
{{- end }}

{{/* Name of the manager's ServiceAccount. */}}
{{- define "mysqlfleet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mysqlfleet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The manager image: repository@digest, else repository:tag, where the tag defaults to appVersion. */}}
{{- define "mysqlfleet.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The restricted Pod Security Standard, for the manager and the test Pod: the image is FROM scratch, runs as
65532 and writes nothing to its filesystem.
*/}}
{{- define "mysqlfleet.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "mysqlfleet.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
    - ALL
{{- end }}

{{/* The port of /healthz and /readyz, and of the metrics. Fixed: the probes and the Service name them. */}}
{{- define "mysqlfleet.healthPort" -}}8081{{- end }}
{{- define "mysqlfleet.metricsPort" -}}8080{{- end }}
