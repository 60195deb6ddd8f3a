{{/* The prefix of every resource name: fullnameOverride, else the release name. */}}
{{- define "orrery.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "orrery.operatorName" -}}
{{- printf "%s-operator" (include "orrery.fullname" .) -}}
{{- end -}}

{{- define "orrery.sidecarName" -}}
{{- printf "%s-sidecar" (include "orrery.fullname" .) -}}
{{- end -}}

{{- define "orrery.serviceAccountName" -}}
{{- default (include "orrery.operatorName" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The operator's ServiceAccount as the API server names its requests. */}}
{{- define "orrery.serviceAccountUser" -}}
{{- printf "system:serviceaccount:%s:%s" .Release.Namespace (include "orrery.serviceAccountName" .) -}}
{{- end -}}

{{- define "orrery.runTokenSecret" -}}
{{- default (printf "%s-run-token" (include "orrery.fullname" .)) .Values.runToken.existingSecret -}}
{{- end -}}

{{/* Labels on every object of the release. */}}
{{- define "orrery.labels" -}}
app.kubernetes.io/name: orrery
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* What selects the operator's pods (the Deployment, Service, PDB and NetworkPolicies; the
     runners' NetworkPolicy allows egress to pods with these labels). */}}
{{- define "orrery.selectorLabels" -}}
app.kubernetes.io/name: orrery
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* registry/repository:tag or registry/repository@digest. */}}
{{- define "orrery.image" -}}
{{- $ref := .image.repository -}}
{{- if .image.registry -}}{{- $ref = printf "%s/%s" .image.registry $ref -}}{{- end -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $ref .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $ref (default .appVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "orrery.operatorImage" -}}
{{- include "orrery.image" (dict "image" .Values.image "appVersion" .Chart.AppVersion) -}}
{{- end -}}

{{- define "orrery.runnerImage" -}}
{{- include "orrery.image" (dict "image" .Values.runner.image "appVersion" .Chart.AppVersion) -}}
{{- end -}}

{{/* The deployment config (operator/src/config.rs; the operator refuses unknown fields). */}}
{{- define "orrery.config" -}}
{{- $c := .Values.config -}}
{{- $config := dict "apiVersion" "config.studio.orrery.dev/v1alpha1" "kind" "OperatorConfig" -}}
{{- $_ := set $config "privateNetworkAllowlist" ($c.privateNetworkAllowlist | default list) -}}
{{- if $c.clusterRanges }}{{- $_ := set $config "clusterRanges" $c.clusterRanges -}}{{- end -}}
{{- $_ := set $config "actingRemotes" $c.actingRemotes -}}
{{- if $c.requireSecretOrigins }}{{- $_ := set $config "requireSecretOrigins" true -}}{{- end -}}
{{- if $c.egressProxy }}{{- $_ := set $config "egressProxy" $c.egressProxy -}}{{- end -}}
{{- if $c.allowedModels }}{{- $_ := set $config "allowedModels" $c.allowedModels -}}{{- end -}}
{{- if $c.defaultModel }}{{- $_ := set $config "defaultModel" $c.defaultModel -}}{{- end -}}
{{- if $c.budgetCeilings }}{{- $_ := set $config "budgetCeilings" $c.budgetCeilings -}}{{- end -}}
{{- if $c.runLimits }}{{- $_ := set $config "runLimits" $c.runLimits -}}{{- end -}}
{{- $_ := set $config "approvalTimeoutSeconds" $c.approvalTimeoutSeconds -}}
{{- $_ := set $config "ttlSecondsAfterFinished" $c.ttlSecondsAfterFinished -}}
{{- $_ := set $config "probeIntervalSeconds" $c.probeIntervalSeconds -}}
{{- $_ := set $config "resyncSeconds" $c.resyncSeconds -}}
{{- if .Values.admissionPolicies.enabled -}}
{{- $policies := list -}}
{{- range $base := list "studioruns-create" "studioruns-decisions" "studioruns-pending" -}}
{{- $name := include "orrery.policyName" (dict "root" $ "base" $base) -}}
{{- $policies = append $policies (dict "policy" $name "binding" $name) -}}
{{- end -}}
{{- $_ := set $config "admissionPolicies" $policies -}}
{{- end -}}
{{- $r := .Values.runner -}}
{{- $runner := dict "image" (include "orrery.runnerImage" .) "imagePullPolicy" $r.image.pullPolicy "resources" $r.resources "deadlineMarginSeconds" $r.deadlineMarginSeconds "startTimeoutSeconds" $r.startTimeoutSeconds -}}
{{- if $r.runtimeClassName }}{{- $_ := set $runner "runtimeClassName" $r.runtimeClassName -}}{{- end -}}
{{- if $r.trustedCertificates }}{{- $_ := set $runner "trustedCertificates" $r.trustedCertificates -}}{{- end -}}
{{- if $r.redactIps }}{{- $_ := set $runner "redactIps" true -}}{{- end -}}
{{- if eq .Values.logging.format "json" }}{{- $_ := set $runner "logFormat" "json" -}}{{- end -}}
{{- $_ := set $config "runner" $runner -}}
{{- $sidecar := dict "namespace" .Release.Namespace "serviceName" (include "orrery.sidecarName" .) "port" .Values.service.port "targetPort" .Values.sidecar.port "podLabels" (include "orrery.selectorLabels" . | fromYaml) -}}
{{- if .Values.sidecar.url }}{{- $_ := set $sidecar "url" .Values.sidecar.url -}}{{- end -}}
{{- $_ := set $config "sidecar" $sidecar -}}
{{- $_ := set $config "runToken" (dict "signingKeyFile" "/etc/orrery/run-token/key.pem" "verifyingKeyFile" "/etc/orrery/run-token-public/key.pub.pem" "audience" .Values.runToken.audience) -}}
{{- toYaml $config -}}
{{- end -}}

{{/* An admission policy's name (and its binding's): `<base>.studio.orrery.dev` for a release
     serving every namespace, `<base>.<watchNamespace>.studio.orrery.dev` for one serving a
     single namespace. Keyed by what the release serves: releases serving different namespaces
     never collide, and a second release serving the same namespaces collides (Helm refuses it,
     after the guard in guard.yaml has said why). */}}
{{- define "orrery.policyName" -}}
{{- if .root.Values.watchNamespace -}}
{{- printf "%s.%s.studio.orrery.dev" .base .root.Values.watchNamespace -}}
{{- else -}}
{{- printf "%s.studio.orrery.dev" .base -}}
{{- end -}}
{{- end -}}

{{/* What the release's controllers serve, as the guard compares it: a namespace, or `*`. */}}
{{- define "orrery.serves" -}}
{{- default "*" .Values.watchNamespace -}}
{{- end -}}


{{/*
The trace flags both containers take (otel.*); nothing without otel.endpoint.
*/}}
{{- define "orrery.otelArgs" -}}
{{- with .Values.otel.endpoint }}
- --otel-endpoint={{ . }}
- --otel-queue-spans={{ $.Values.otel.queueSpans }}
{{- if $.Values.otel.headersSecret.name }}
- --otel-headers-file=/etc/orrery/otel-headers/headers
{{- end }}
{{- if $.Values.otel.caConfigMap.name }}
- --otel-ca-file=/etc/orrery/otel-ca/ca.crt
{{- end }}
{{- end }}
{{- end }}

{{/*
The collector's headers and CA, mounted in both containers when given.
*/}}
{{- define "orrery.otelMounts" -}}
{{- if and .Values.otel.endpoint .Values.otel.headersSecret.name }}
- {name: otel-headers, mountPath: /etc/orrery/otel-headers, readOnly: true}
{{- end }}
{{- if and .Values.otel.endpoint .Values.otel.caConfigMap.name }}
- {name: otel-ca, mountPath: /etc/orrery/otel-ca, readOnly: true}
{{- end }}
{{- end }}

{{/*
The port of otel.endpoint: the one it names, else 443 for https and 80 for http.
*/}}
{{- define "orrery.otelPort" -}}
{{- $url := urlParse .Values.otel.endpoint }}
{{- $host := get $url "host" }}
{{- if regexMatch ":[0-9]+$" $host }}
{{- regexFind "[0-9]+$" $host }}
{{- else if eq (get $url "scheme") "https" }}443
{{- else }}80
{{- end }}
{{- end }}
