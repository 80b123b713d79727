{{/* The release's kcompact name: <release>-kcompact, or the release name when it already says kcompact. */}}
{{- define "kcompact.fullname" -}}
{{- if contains "kcompact" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-kcompact" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kcompact.labels" -}}
app.kubernetes.io/name: kcompact
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The labels that select the pods kcompact runs in: every sidecar pod, or this release's proxies. */}}
{{- define "kcompact.podSelector" -}}
{{- if eq .Values.mode "standalone" -}}
app.kubernetes.io/name: kcompact
app.kubernetes.io/instance: {{ .Release.Name }}
{{- else -}}
kcompact.dev/sidecar: "true"
{{- end -}}
{{- end -}}

{{- define "kcompact.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "kcompact.tlsDir" -}}/etc/kcompact-tls{{- end -}}
{{- define "kcompact.saslDir" -}}/etc/kcompact-sasl{{- end -}}

{{/* kcompact.json: the chart's settings, then .Values.config over them. */}}
{{- define "kcompact.config" -}}
{{- $v := .Values -}}
{{- if not $v.upstream -}}
{{- fail "set upstream: HOST:PORT of the store's bootstrap brokers (--set upstream=broker:9092)" -}}
{{- end -}}
{{- if not (has $v.mode (list "sidecar" "standalone")) -}}
{{- fail (printf "mode is %q: use sidecar or standalone" $v.mode) -}}
{{- end -}}
{{- $standalone := eq $v.mode "standalone" -}}
{{- $c := dict
  "upstream" $v.upstream
  "listen" (printf "%s:%d" (ternary "0.0.0.0" "127.0.0.1" $standalone) (int $v.listeners.kafka))
  "advertisedHost" (ternary ($v.standalone.advertisedHost | default (printf "%s.%s.svc" (include "kcompact.fullname" .) .Release.Namespace)) "127.0.0.1" $standalone)
  "brokerPortBase" (int $v.listeners.brokerPortBase)
  "dataDir" "/var/lib/kcompact"
  "metricsListen" (printf "0.0.0.0:%d" (int $v.listeners.management))
  "adminListen" (printf "127.0.0.1:%d" (int $v.listeners.admin))
  "carrierGroup" ($v.carrier.group | default (printf "%s-carriers" (include "kcompact.fullname" .)))
  "carrierSessionTimeoutMs" (int $v.carrier.sessionTimeoutMs)
  "logLevel" "info"
  "topics" $v.topics
-}}
{{- if $v.upstreamTls.enabled -}}
{{- $_ := set $c "upstreamTls" true -}}
{{- if $v.upstreamTls.secretName -}}
{{- $_ := set $c "upstreamTlsCaFile" (printf "%s/ca.crt" (include "kcompact.tlsDir" .)) -}}
{{- if $v.upstreamTls.clientCertificate -}}
{{- $_ := set $c "upstreamTlsCertFile" (printf "%s/tls.crt" (include "kcompact.tlsDir" .)) -}}
{{- $_ := set $c "upstreamTlsKeyFile" (printf "%s/tls.key" (include "kcompact.tlsDir" .)) -}}
{{- end -}}
{{- end -}}
{{- if $v.upstreamTls.serverName -}}
{{- $_ := set $c "upstreamTlsServerName" $v.upstreamTls.serverName -}}
{{- end -}}
{{- end -}}
{{- if $v.upstreamSasl.mechanism -}}
{{- if not (and $v.upstreamSasl.username $v.upstreamSasl.passwordSecret) -}}
{{- fail "upstreamSasl.mechanism needs upstreamSasl.username and upstreamSasl.passwordSecret (a Secret holding the password)" -}}
{{- end -}}
{{- $_ := set $c "upstreamSaslMechanism" $v.upstreamSasl.mechanism -}}
{{- $_ := set $c "upstreamSaslUsername" $v.upstreamSasl.username -}}
{{- $_ := set $c "upstreamSaslPasswordFile" (printf "%s/%s" (include "kcompact.saslDir" .) $v.upstreamSasl.passwordKey) -}}
{{- end -}}
{{- mergeOverwrite $c $v.config | toPrettyJson -}}
{{- end -}}

{{/*
The kcompact container. As a sidecar (an init container with restartPolicy: Always, Kubernetes
1.29+) it starts before the application, runs beside it and stops after it.
Call with (dict "root" $ "sidecar" true).
*/}}
{{- define "kcompact.container" -}}
{{- $v := .root.Values -}}
name: kcompact
image: {{ include "kcompact.image" .root }}
imagePullPolicy: {{ $v.image.pullPolicy }}
{{- if .sidecar }}
restartPolicy: Always
{{- end }}
args: ["proxy"]
env:
  # The proxy's config file; the admin verbs run in the container read it too.
  - name: KCOMPACT_CONFIG
    value: /etc/kcompact/kcompact.json
  # Two glibc malloc arenas instead of one per thread (set in the image too).
  - name: MALLOC_ARENA_MAX
    value: "2"
ports:
  - name: kafka
    containerPort: {{ $v.listeners.kafka }}
  {{- if eq $v.mode "standalone" }}
  {{- range $i, $_ := until (int $v.standalone.brokers) }}
  - name: broker-{{ $i }}
    containerPort: {{ add $v.listeners.brokerPortBase $i }}
  {{- end }}
  {{- end }}
  # Probes and /metrics only; the admin listener (127.0.0.1) is no container port.
  - name: management
    containerPort: {{ $v.listeners.management }}
# Startup covers recovering the key index from the data directory (or the upstream).
startupProbe:
  httpGet:
    path: /startupz
    port: management
  periodSeconds: {{ $v.probes.startup.periodSeconds }}
  failureThreshold: {{ $v.probes.startup.failureThreshold }}
livenessProbe:
  httpGet:
    path: /livez
    port: management
  periodSeconds: {{ $v.probes.liveness.periodSeconds }}
  failureThreshold: {{ $v.probes.liveness.failureThreshold }}
# Fails only when the pod should leave traffic: shutting down, or the upstream unreachable.
readinessProbe:
  httpGet:
    path: /readyz
    port: management
  periodSeconds: {{ $v.probes.readiness.periodSeconds }}
  failureThreshold: {{ $v.probes.readiness.failureThreshold }}
resources:
  {{- toYaml $v.resources | nindent 2 }}
securityContext:
  {{- toYaml $v.securityContext | nindent 2 }}
volumeMounts:
  - name: kcompact-config
    mountPath: /etc/kcompact
    readOnly: true
  - name: kcompact-data
    mountPath: /var/lib/kcompact
  - name: kcompact-tmp
    mountPath: /tmp
  {{- if and $v.upstreamTls.enabled $v.upstreamTls.secretName }}
  - name: kcompact-upstream-tls
    mountPath: {{ include "kcompact.tlsDir" .root }}
    readOnly: true
  {{- end }}
  {{- if $v.upstreamSasl.mechanism }}
  - name: kcompact-upstream-sasl
    mountPath: {{ include "kcompact.saslDir" .root }}
    readOnly: true
  {{- end }}
{{- end -}}

{{/* The volumes the kcompact container mounts. Call with the root context. */}}
{{- define "kcompact.volumes" -}}
- name: kcompact-config
  configMap:
    name: {{ include "kcompact.fullname" . }}
# The index is a cache of the upstream: a new pod rebuilds it. sizeLimit bounds what a runaway
# index may take from the node.
- name: kcompact-data
  emptyDir:
    sizeLimit: {{ .Values.dataVolume.sizeLimit }}
- name: kcompact-tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpVolume.sizeLimit }}
{{- if and .Values.upstreamTls.enabled .Values.upstreamTls.secretName }}
- name: kcompact-upstream-tls
  secret:
    secretName: {{ .Values.upstreamTls.secretName }}
{{- end }}
{{- if .Values.upstreamSasl.mechanism }}
- name: kcompact-upstream-sasl
  secret:
    secretName: {{ .Values.upstreamSasl.passwordSecret }}
{{- end }}
{{- end -}}

{{/*
For an umbrella chart that owns the workload: its pod spec takes
  initContainers: [{{ include "kcompact.sidecar" .Subcharts.kcompact | nindent 4 }}]
  volumes: {{ include "kcompact.volumes" .Subcharts.kcompact | nindent 4 }}
and its pod template the labels of "kcompact.sidecarLabels" (so the PodMonitor and the
NetworkPolicy select it) and the annotations of "kcompact.podAnnotations".
*/}}
{{- define "kcompact.sidecar" -}}
- {{ include "kcompact.container" (dict "root" . "sidecar" true) | nindent 2 | trim }}
{{- end -}}

{{- define "kcompact.sidecarLabels" -}}
kcompact.dev/sidecar: "true"
{{- end -}}

{{/* A changed config rolls the pods. */}}
{{- define "kcompact.podAnnotations" -}}
checksum/kcompact-config: {{ include "kcompact.config" . | sha256sum }}
{{- end -}}
