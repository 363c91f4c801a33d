{{/* Labels on every object: what it is part of (name: gpu-advisor, gpu-advisor-agent, -scheduler or
-certs), which release, which version, who manages it. Called with (dict "root" $ "name" "…"), so no
object can be given the common labels without its name. */}}
{{- define "gpu-advisor.labels" -}}
{{- $root := .root -}}
app.kubernetes.io/name: {{ required "gpu-advisor.labels needs a name" .name }}
app.kubernetes.io/part-of: gpu-advisor
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version }}
{{- end -}}

{{/* The advisor's image: repository:tag, or repository:tag@digest when a digest is pinned. */}}
{{- define "gpu-advisor.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{ printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else -}}
{{ printf "%s:%s" .Values.image.repository $tag }}
{{- end -}}
{{- end -}}

{{/* kube-scheduler at the cluster's own version (v1.30.4-eks-... → v1.30.4) unless a tag is given. */}}
{{- define "gpu-advisor.schedulerImage" -}}
{{- $version := regexFind "^v[0-9]+\\.[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version -}}
{{ printf "%s:%s" .Values.scheduler.image.repository (.Values.scheduler.image.tag | default $version) }}
{{- end -}}

{{/* Pod security context shared by the non-root pods. */}}
{{- define "gpu-advisor.nonRoot" -}}
runAsNonRoot: true
runAsUser: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "gpu-advisor.lockedDown" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* Two objects of a file shared with kustomize, relabelled for this release. */}}
{{- define "gpu-advisor.relabel" -}}
{{- $doc := .doc -}}
{{- $meta := $doc.metadata -}}
{{- $_ := set $meta "labels" (merge (dict) (include "gpu-advisor.labels" (dict "root" .root "name" .name) | fromYaml) ($meta.labels | default dict)) -}}
{{- toYaml $doc -}}
{{- end -}}

{{/* The release namespace and the configured ones, which the webhooks never see. */}}
{{- define "gpu-advisor.excluded" -}}
{{- toJson (uniq (concat .Values.admission.excludedNamespaces (list .Release.Namespace))) -}}
{{- end -}}

{{/* The pod of the certificate Job and CronJob: `gpu-advisor certs ensure` for this release. */}}
{{- define "gpu-advisor.certsPod" -}}
metadata:
  labels:
    {{- include "gpu-advisor.labels" (dict "root" . "name" "gpu-advisor-certs") | nindent 4 }}
spec:
  serviceAccountName: gpu-advisor-certs
  restartPolicy: OnFailure
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets: {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- include "gpu-advisor.nonRoot" . | nindent 4 }}
  containers:
    - name: certs
      image: {{ include "gpu-advisor.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        - certs
        - ensure
        - --namespace={{ .Release.Namespace }}
        - --service=gpu-advisor
        - --secret=gpu-advisor-tls
        - --config=gpu-advisor
      resources:
        requests: {cpu: 10m, memory: 64Mi}
        limits: {memory: 128Mi}
      securityContext:
        {{- include "gpu-advisor.lockedDown" . | nindent 8 }}
{{- end -}}

{{/* "true" when the routing policy (a MutatingAdmissionPolicy) routes GPU pods: routing on, and mode
policy, or auto where the API server serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy. */}}
{{- define "gpu-advisor.routeByPolicy" -}}
{{- $mode := .Values.routing.mode -}}
{{- $served := .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy" -}}
{{- and .Values.routing.enabled (or (eq $mode "policy") (and (eq $mode "auto") $served)) | toString -}}
{{- end -}}

{{/* The advisor's --route-gpu-pods-to: advisor.routeGpuPodsTo when set; else routing.scheduler when routing
is on and no policy routes (routing.mode webhook, or auto on an API server without the policy): then the
mutating webhook routes, and it fails open, so pods created while the advisor is down are not routed. */}}
{{- define "gpu-advisor.routeGpuPodsTo" -}}
{{- if .Values.advisor.routeGpuPodsTo -}}
{{ .Values.advisor.routeGpuPodsTo }}
{{- else if and .Values.routing.enabled (ne (include "gpu-advisor.routeByPolicy" .) "true") -}}
{{ .Values.routing.scheduler }}
{{- end -}}
{{- end -}}
