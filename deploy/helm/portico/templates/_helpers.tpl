{{/* Chart name, overridable. */}}
{{- define "portico.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Prefix of every object name: <release>-portico, or the release name if it already says portico. */}}
{{- define "portico.fullname" -}}
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

{{- define "portico.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "portico.selectorLabels" -}}
app.kubernetes.io/name: {{ include "portico.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "portico.labels" -}}
helm.sh/chart: {{ include "portico.chart" . }}
{{ include "portico.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "portico.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "portico.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Kubernetes object kinds portico watches in namespaces, and what it does with them. Shared by the ClusterRole and the namespaced Role. */}}
{{- define "portico.namespacedRules" -}}
# Routing inputs: listed and watched; Services also read one by one (--publish-service).
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["services", "secrets"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["get", "list", "watch"]
# The leader writes the load-balancer address into Ingress status (a merge patch).
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses/status"]
  verbs: ["patch"]
# Configuration problems become Warning Events on the Ingress (core v1 Events:
# created, then patched to count repeats).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
# Gateway API (read only where its CRDs are installed): routes and grants, and the
# leader's status on Gateways, HTTPRoutes and GRPCRoutes (merge patches).
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["gateways", "httproutes", "grpcroutes", "referencegrants"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["gateways/status", "httproutes/status", "grpcroutes/status"]
  verbs: ["patch"]
# Scale-to-zero (Services annotated portico.dev/scale-to-zero): read a workload and
# note its replica count before sleeping (portico.dev/replicas-before-sleep), scale it
# through its scale subresource, and share activity between replicas in one Lease per
# sleepable Service ("portico-activity-<service>", in the Service's namespace).
- apiGroups: ["apps"]
  resources: ["deployments", "statefulsets"]
  verbs: ["get", "patch"]
- apiGroups: ["apps"]
  resources: ["deployments/scale", "statefulsets/scale"]
  verbs: ["get", "patch"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "create", "patch"]
# CacheInvalidation (crds/): every replica applies each one to its cache and writes
# its own entry in status.replicas[] (read-modify-write with the resourceVersion); the
# leader deletes them once done and past their TTL.
- apiGroups: ["portico.dev"]
  resources: ["cacheinvalidations"]
  verbs: ["get", "list", "watch", "delete"]
- apiGroups: ["portico.dev"]
  resources: ["cacheinvalidations/status"]
  verbs: ["update"]
{{- end }}

{{/* Cluster-scoped: IngressClasses decide which Ingresses portico serves. */}}
{{- define "portico.clusterRules" -}}
- apiGroups: ["networking.k8s.io"]
  resources: ["ingressclasses"]
  verbs: ["get", "list", "watch"]
# Gateway API: GatewayClasses (and their status), and Namespaces, whose labels
# allowedRoutes selectors match.
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["gatewayclasses"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["gateway.networking.k8s.io"]
  resources: ["gatewayclasses/status"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["get", "list", "watch"]
{{- end }}
