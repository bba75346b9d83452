{{/*
The chart renders the kustomize manifests (files/ is ../../kustomize) as kustomize does:
each object read from its file, put into a namespace and labelled like its
kustomization, then printed. tests/unit/deploy/test_chart.py checks the result against
`kubectl kustomize`.
*/}}

{{/* Kinds without a namespace. */}}
{{- define "kumaco.clusterScoped" -}}
Namespace ClusterRole ClusterRoleBinding ValidatingAdmissionPolicy ValidatingAdmissionPolicyBinding
{{- end }}

{{/* The labels kustomize/base puts on its objects. */}}
{{- define "kumaco.baseLabels" -}}
app.kubernetes.io/name: kumaco
app.kubernetes.io/part-of: kured
{{- end }}

{{/*
The documents of a file of files/ (a path below kustomize/), as a list of objects.
Usage: include "kumaco.documents" (list $ "base/rbac-nodes.yaml") | fromYamlArray
*/}}
{{- define "kumaco.documents" -}}
{{- $root := index . 0 -}}
{{- $docs := list -}}
{{- range splitList "\n---\n" ($root.Files.Get (printf "files/%s" (index . 1))) -}}
{{- $doc := fromYaml . -}}
{{- if $doc -}}{{- $docs = append $docs $doc -}}{{- end -}}
{{- end -}}
{{- toYaml $docs -}}
{{- end }}

{{/*
One object as kustomize renders it: in `namespace` (namespaced kinds only), with
`labels` added (they win, as kustomize's labels transformer), its ServiceAccount
subjects in the release's namespace (kumaco's ServiceAccount). Printed as a document.
Usage: include "kumaco.object" (dict "root" $ "object" $obj "namespace" $ns "labels" $labels)
*/}}
{{- define "kumaco.object" -}}
{{- $o := .object -}}
{{- if not (has $o.kind (splitList " " (include "kumaco.clusterScoped" .))) -}}
{{- $_ := set $o.metadata "namespace" .namespace -}}
{{- end -}}
{{- if .labels -}}
{{- $_ := set $o.metadata "labels" (merge (deepCopy .labels) ($o.metadata.labels | default dict)) -}}
{{- end -}}
{{- range $o.subjects | default list -}}
{{- if eq .kind "ServiceAccount" -}}{{- $_ := set . "namespace" $.root.Release.Namespace -}}{{- end -}}
{{- end }}
---
{{ toYaml $o }}
{{- end }}

{{/* Every object of a file of files/, rendered by kumaco.object. */}}
{{- define "kumaco.file" -}}
{{- $args := . -}}
{{- range include "kumaco.documents" (list .root .file) | fromYamlArray -}}
{{- include "kumaco.object" (merge (dict "object" .) $args) -}}
{{- end -}}
{{- end }}

{{/* The watched namespaces: windowNamespaces, else the release's. */}}
{{- define "kumaco.windowNamespaces" -}}
{{- if .Values.windowNamespaces -}}
{{- join " " .Values.windowNamespaces -}}
{{- else -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end }}
