"""JSON text kept compressed: the manifests and pod templates ``gitdeploy run`` holds for every app.

An app's manifest and pod template are its largest part in memory (about 2 KiB of canonical JSON
each, most of the 5 KiB an app's desired state takes), and they are read only when a rollout
starts, a diff is shown or a rollback restores settings. Kept as zlib streams with a preset
dictionary of the words every Kubernetes manifest repeats (field names, common values), they take
about a quarter of that; reading one back takes microseconds.

Compression here is deterministic (one level, one dictionary), so two equal texts pack to equal
bytes and packed texts compare without being unpacked.

>>> text = '{"spec":{"containers":[{"image":"nginx:1.27","name":"web"}]}}'
>>> unpack(pack(text)) == text, pack(text) == pack(text), len(pack(text)) < len(text)
(True, True, True)
"""

from __future__ import annotations

import zlib

LEVEL = 6

DICTIONARY = (
    b'"apiVersion":"apps/v1","kind":"Deployment","kind":"DeploymentConfig","apiVersion":"apps.openshift.io/v1",'
    b'"metadata":{"annotations":{"kubernetes.io/change-cause":"","labels":{"app":"","app.kubernetes.io/name":"",'
    b'"app.kubernetes.io/instance":"","app.kubernetes.io/component":"","app.kubernetes.io/part-of":"",'
    b'"app.kubernetes.io/version":""},"name":"","namespace":""},"spec":{"minReadySeconds":0,"paused":false,'
    b'"progressDeadlineSeconds":600,"replicas":1,"revisionHistoryLimit":10,"selector":{"matchLabels":{"app":""}},'
    b'"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"},'
    b'"triggers":[{"type":"ConfigChange"},{"imageChangeParams":{"automatic":true,"containerNames":[],'
    b'"from":{"kind":"ImageStreamTag","name":""}},"type":"ImageChange"}],'
    b'"template":{"metadata":{"annotations":{"prometheus.io/port":"","prometheus.io/scrape":"true"},"labels":{}},'
    b'"spec":{"affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[]}},'
    b'"containers":[{"args":[],"command":[],"env":[{"name":"","value":""},{"name":"","valueFrom":{"fieldRef":'
    b'{"fieldPath":"metadata.name"}}},{"name":"","valueFrom":{"secretKeyRef":{"key":"","name":""}}}],'
    b'"envFrom":[{"configMapRef":{"name":""}}],"image":"","imagePullPolicy":"IfNotPresent","imagePullPolicy":"Always",'
    b'"livenessProbe":{"httpGet":{"path":"/healthz","port":"http"},"initialDelaySeconds":10,"periodSeconds":10,'
    b'"timeoutSeconds":1,"failureThreshold":3},"name":"","ports":[{"containerPort":8080,"name":"http",'
    b'"protocol":"TCP"},{"containerPort":9090,"name":"metrics"}],"readinessProbe":{"httpGet":{"path":"/ready",'
    b'"port":"http"}},"resources":{"limits":{"cpu":"1000m","memory":"256Mi"},"requests":{"cpu":"100m",'
    b'"memory":"128Mi"}},"securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]},'
    b'"readOnlyRootFilesystem":true,"runAsNonRoot":true},"volumeMounts":[{"mountPath":"/tmp","name":"tmp",'
    b'"readOnly":true}]}],"nodeSelector":{},"restartPolicy":"Always","securityContext":{"fsGroup":2000,'
    b'"runAsNonRoot":true,"runAsUser":1000,"seccompProfile":{"type":"RuntimeDefault"}},"serviceAccountName":"",'
    b'"terminationGracePeriodSeconds":30,"tolerations":[],"volumes":[{"configMap":{"name":""},"name":"config"},'
    b'{"emptyDir":{"sizeLimit":"256Mi"},"name":"tmp"},{"name":"","secret":{"secretName":""}}]}}}}'
)
"""The preset dictionary: text that Kubernetes manifests and pod templates repeat, written for
this module (zlib finds matches in it as if it preceded every text). Changing it changes the
packed bytes, never what unpacks; nothing packed outlives the process."""


def pack(text: str) -> bytes:
    """``text`` compressed (equal texts give equal bytes)."""
    packer = zlib.compressobj(LEVEL, zdict=DICTIONARY)
    return packer.compress(text.encode()) + packer.flush()


def unpack(data: bytes) -> str:
    """The text :func:`pack` was given."""
    unpacker = zlib.decompressobj(zdict=DICTIONARY)
    return (unpacker.decompress(data) + unpacker.flush()).decode()
