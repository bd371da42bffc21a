{{- /* Generated from config/rbac/role.yaml by hack/chartgen (make manifests). DO NOT EDIT. */ -}}

{{- /* Rules of the manager's ClusterRole (mysqlfleet-manager in config/rbac/role.yaml). */ -}}
{{- define "mysqlfleet.clusterRules" -}}
- apiGroups:
  - events.k8s.io
  resources:
  - events
  verbs:
  - create
  - patch
- apiGroups:
  - mysqlfleet.io
  resources:
  - mysqlclusters
  verbs:
  - get
  - list
  - patch
  - update
  - watch
- apiGroups:
  - mysqlfleet.io
  resources:
  - mysqlclusters/finalizers
  verbs:
  - update
- apiGroups:
  - mysqlfleet.io
  resources:
  - mysqlclusters/status
  verbs:
  - get
  - patch
  - update
{{- end }}

{{- /* Rules of the manager's Role in its own namespace (mysqlfleet-system/mysqlfleet-manager in config/rbac/role.yaml). */ -}}
{{- define "mysqlfleet.namespaceRules" -}}
- apiGroups:
  - ""
  resources:
  - configmaps
  verbs:
  - create
  - delete
  - get
  - list
  - watch
- apiGroups:
  - ""
  resources:
  - events
  verbs:
  - create
  - patch
- apiGroups:
  - ""
  resources:
  - secrets
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - update
  - watch
- apiGroups:
  - coordination.k8s.io
  resources:
  - leases
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - update
  - watch
{{- end }}
