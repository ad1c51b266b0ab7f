{{- define "chainloom.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "chainloom.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "chainloom.serviceAccountName" -}}
{{- default (include "chainloom.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "chainloom.operatorName" -}}
{{- printf "%s-operator" (include "chainloom.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "chainloom.operatorSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "chainloom.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "chainloom.operatorNamespacedRules" -}}
- apiGroups: [chainloom.io]
  resources: [ingestpipelines, relayerpools, backendtables]
  verbs: [get, list, watch, patch, update]
- apiGroups: [chainloom.io]
  resources: [ingestpipelines/status, relayerpools/status, backendtables/status]
  verbs: [get, patch, update]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, list, watch, create, patch, update, delete]
- apiGroups: [""]
  resources: [configmaps, services, serviceaccounts]
  verbs: [get, list, watch, create, patch, update, delete]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch, create, patch, update, delete]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [get, list, watch, create, patch, update, delete]
- apiGroups: [sparkoperator.k8s.io]
  resources: [sparkapplications, scheduledsparkapplications]
  verbs: [get, list, watch, create, patch, update, delete]
- apiGroups: [""]
  resources: [secrets]
  verbs: [get]
# A SparkApplication's driver pod (watched, found by its owner labels): why it cannot start
# (image, scheduling, a missing Secret), and once finished its termination message (the counts).
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [kopf.dev]
  resources: [kopfpeerings]
  verbs: [get, list, watch, patch]
{{- end -}}
