"""The API, side by side: kubectl commands (every installed kubectl version) and official-client calls on the
embedded and the upstream API server, compared by exit code / status code, ``Status`` reason and message,
and printed output (ages, uids, resource versions and times normalised away)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from mockgpu.backends.upstream import binaries

SCHEDULER = "no-such-scheduler"  # pods stay Pending and unbound on both sides: nothing but the API is compared


def kubectl_versions() -> list[tuple[str, str]]:
    """(version, path) of every kubectl here: google-cloud-sdk's kubectl.1.NN and the one built upstream."""
    out = [(p.name.split("kubectl.")[1], str(p)) for p in sorted(Path("/usr/lib/google-cloud-sdk/bin").glob(
        "kubectl.1.*"))]
    built = binaries.bin_dir() / "kubectl"
    if built.exists() or shutil.which("go"):
        out.append((binaries.versions()["KUBERNETES_VERSION"].lstrip("v"), str(built)))
    return out


POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {{app: demo}}}}
spec:
  schedulerName: {scheduler}
  containers:
  - name: c
    image: mockgpu/workload
    command: ["sleep", "60"]
    resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""
WORKLOADS = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  replicas: 0
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: mockgpu/workload}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {no-such-label: "true"}
      containers: [{name: c, image: mockgpu/workload}]
"""
# what a tutorial applies: a Deployment and the Service in front of it (kubectl apply -f of both at once)
DEPLOY_AND_SERVICE = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: mockgpu/workload, ports: [{containerPort: 8080}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
"""
# a tutorial's access control: who may read pods in one namespace
ROLE_AND_BINDING = """apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-reader}
rules:
- apiGroups: [""]
  resources: [pods, pods/log]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-reads-pods}
subjects:
- {kind: User, name: alice}
roleRef: {kind: Role, name: pod-reader, apiGroup: rbac.authorization.k8s.io}
"""
SECRETS = """apiVersion: v1
kind: Secret
metadata: {name: s1}
stringData: {user: admin, password: hunter2}
---
apiVersion: v1
kind: Secret
metadata: {name: tls1}
type: kubernetes.io/tls
data: {tls.crt: Y2VydA==}
---
apiVersion: v1
kind: Secret
metadata: {name: frozen}
immutable: true
data: {a: YQ==}
---
apiVersion: v1
kind: Secret
metadata: {name: reg}
type: kubernetes.io/dockerconfigjson
data: {.dockerconfigjson: W10=}
"""
BAD_SECRET = """apiVersion: v1
kind: Secret
metadata: {name: bad64}
data: {a: "not base64!"}
"""
BAD_POD = """apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers: []
"""

SSA_DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: ssa, labels: {app: ssa}}
spec:
  replicas: 1
  selector: {matchLabels: {app: ssa}}
  template:
    metadata: {labels: {app: ssa}}
    spec:
      schedulerName: no-such-scheduler
      containers:
      - name: app
        image: mockgpu/workload
        ports: [{containerPort: 80}]
"""
SSA_CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata: {name: ssa}
data: {a: "1", b: "2"}
"""
SSA_ROLE = """apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: ssa}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list]
"""


def ssa_battery(n: list[str], files: Path) -> list[tuple[str, list[str]]]:
    """Server-side apply: create, re-apply, a second manager's conflict and ``--force-conflicts``, fields dropped
    from the applied configuration, ``/scale`` and a label taking ownership, dry run, the migration from
    client-side apply, and the managedFields each leaves (``time`` normalised; a Deployment's are read per manager,
    since the two control planes' controllers record their own status entries)."""
    def write(name: str, text: str) -> str:
        (files / name).write_text(text)
        return str(files / name)
    dep = write("ssa-d1.yaml", SSA_DEPLOYMENT)
    dep2 = write("ssa-d2.yaml", SSA_DEPLOYMENT.replace("replicas: 1", "replicas: 2"))
    dep3 = write("ssa-d3.yaml", SSA_DEPLOYMENT.replace("  replicas: 1\n", "").replace(
        "        ports: [{containerPort: 80}]\n", ""))
    other = write("ssa-other.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: ssa}\n"
                                    "spec: {replicas: 3}\n")
    cm = write("ssa-cm.yaml", SSA_CONFIGMAP)
    cm2 = write("ssa-cm2.yaml", SSA_CONFIGMAP.replace('b: "2"', 'c: "3"'))
    cm_other = write("ssa-cm-other.yaml", 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, labels: {l: x}}\n'
                                          'data: {a: "9", c: "4"}\n')
    cm_new = write("ssa-cm-new.yaml", SSA_CONFIGMAP.replace("name: ssa", "name: ssa-new"))
    role = write("ssa-role.yaml", SSA_ROLE)
    role2 = write("ssa-role2.yaml", SSA_ROLE.replace("[get, list]", "[get]"))
    csa = write("ssa-csa.yaml", SSA_DEPLOYMENT.replace("name: ssa,", "name: csa,"))
    csa2 = write("ssa-csa2.yaml", SSA_DEPLOYMENT.replace("name: ssa,", "name: csa,").replace("replicas: 1",
                                                                                               "replicas: 5"))

    def owned(kind: str, name: str, *managers: str) -> list[str]:
        jp = "".join(f'{m}:{{range .metadata.managedFields[?(@.manager=="{m}")]}} {{.operation}} {{.apiVersion}} '
                     f'{{.subresource}} {{.time}} {{.fieldsV1}}{{end}}{{"\\n"}}' for m in managers)
        return ["get", kind, name, "-o", "jsonpath=" + jp, *n]
    ssa = ["apply", "--server-side"]
    return [
        ("apply --server-side (create)", [*ssa, "-f", dep, *n]),
        ("apply --server-side managedFields", owned("deployment", "ssa", "kubectl", "other")),
        ("apply --server-side (unchanged)", [*ssa, "-f", dep, *n]),
        ("apply --server-side (configured)", [*ssa, "-f", dep2, *n]),
        ("apply --server-side by another manager (conflict)", [*ssa, "--field-manager=other", "-f", other, *n]),
        ("apply --server-side --force-conflicts", [*ssa, "--field-manager=other", "--force-conflicts", "-f", other,
                                                   *n]),
        ("managedFields after a forced apply", owned("deployment", "ssa", "kubectl", "other")),
        ("apply --server-side, replicas now another's (conflict)", [*ssa, "-f", dep2, *n]),
        ("apply --server-side without replicas and ports", [*ssa, "-f", dep3, *n]),
        ("managedFields after dropping fields", owned("deployment", "ssa", "kubectl", "other")),
        ("get deployment -o jsonpath after dropping fields", ["get", "deployment", "ssa", "-o", "jsonpath="
                                                              "{.spec.replicas} {.spec.template.spec.containers}", *n]),
        ("scale a server-side applied deployment", ["scale", "deployment", "ssa", "--replicas=0", *n]),
        ("label a server-side applied deployment", ["label", "deployment", "ssa", "x=y", *n]),
        ("managedFields after scale and label", owned("deployment", "ssa", "kubectl", "other", "kubectl-label")),
        ("apply --server-side --dry-run=server", [*ssa, "--dry-run=server", "--force-conflicts", "-f", dep2, *n]),
        ("nothing stored by the dry run", ["get", "deployment", "ssa", "-o", "jsonpath={.spec.replicas}", *n]),
        ("apply --server-side a ConfigMap", [*ssa, "-f", cm, *n]),
        ("apply --server-side a ConfigMap by another manager (2 conflicts)", [*ssa, "--field-manager=other", "-f",
                                                                            cm_other, *n]),
        ("apply --server-side a ConfigMap without a key", [*ssa, "-f", cm2, *n]),
        ("get configmap -o yaml --show-managed-fields", ["get", "configmap", "ssa", "-o", "yaml",
                                                         "--show-managed-fields", *n]),
        ("create configmap records kubectl-create", ["create", "configmap", "ssa-created", "--from-literal=x=y",
                                                     *n]),
        ("get created configmap --show-managed-fields", ["get", "configmap", "ssa-created", "-o", "yaml",
                                                         "--show-managed-fields", *n]),
        ("apply --server-side a Role", [*ssa, "-f", role, *n]),
        ("apply --server-side a Role with fewer verbs", [*ssa, "-f", role2, *n]),
        ("get role -o yaml --show-managed-fields", ["get", "role", "ssa", "-o", "yaml", "--show-managed-fields",
                                                    *n]),
        ("apply (client-side) before server-side", ["apply", "-f", csa, *n]),
        ("managedFields of a client-side apply", owned("deployment", "csa", "kubectl",
                                                       "kubectl-client-side-apply")),
        ("apply --server-side after client-side apply (migration)", [*ssa, "-f", csa2, *n]),
        ("managedFields after the migration", owned("deployment", "csa", "kubectl", "kubectl-client-side-apply")),
        ("last-applied annotation after the migration", ["get", "deployment", "csa", "-o", "jsonpath={.metadata."
                                                         "annotations.kubectl\\.kubernetes\\.io/last-applied-"
                                                         "configuration}", *n]),
        ("managedFields of a created, labelled and patched pod", owned(
            "pod", "p1", "kubectl-create", "kubectl-label", "kubectl-annotate", "kubectl-patch")),
        ("apply --server-side with a too long field manager (422)", [*ssa, "--field-manager=" + "m" * 129, "-f", cm,
                                                                     *n]),
        ("create a role that may patch configmaps", ["create", "role", "ssa-patcher", "--verb=get,patch",
                                                     "--resource=configmaps", *n]),
        ("bind it to dave", ["create", "rolebinding", "ssa-patcher", "--role=ssa-patcher", "--user=dave", *n]),
        ("apply --server-side creating as dave (403: create)", [*ssa, "-f", cm_new, "--as=dave", *n]),
        ("apply --server-side updating as dave", [*ssa, "--field-manager=dave", "--force-conflicts", "-f", cm,
                                                  "--as=dave", *n]),
        ("delete the server-side applied objects", ["delete", "deployment/ssa", "deployment/csa", "configmap/ssa",
                                                    "configmap/ssa-created", "role/ssa", "role/ssa-patcher",
                                                    "rolebinding/ssa-patcher", *n]),
    ]


NORMALISE = [  # in order: the token volume's random suffix and uids first, since they can look like an age ("25m4s")
    (re.compile(r"kube-api-access-[a-z0-9]{5}"), "kube-api-access-<random>"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uid>"),
    (re.compile(r"\b\d+(\.\d+)?(s|m|h|d|y)(\d+(s|m|h))?\b"), "<age>"),
    (re.compile(r"<invalid>|<unknown>"), "<age>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z"), "<time>"),
    (re.compile(r"\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}"), "<time>"),
    (re.compile(r"https://127\.0\.0\.1:\d+"), "<server>"),
    # Service addresses and node ports: upstream picks free ones at random, the embedded server derives them
    (re.compile(r"\b10\.96\.\d{1,3}\.\d{1,3}\b"), "<cluster-ip>"),
    (re.compile(r"(\d+):3\d{4}/"), r"\1:<node-port>/"),
    (re.compile(r'"resourceVersion":\s*"\d+"|resourceVersion: "?\d+"?'), "<rv>"),
    (re.compile(r"/tmp/\S+"), "<path>"),
    (re.compile(r"[ \t]+"), " "),
]


def normalise(text: str) -> str:
    for pattern, repl in NORMALISE:
        text = pattern.sub(repl, text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def kubectl_battery(ns: str, files: Path) -> list[tuple[str, list[str]]]:
    """(case, argv) in order; each runs on a fresh namespace ``ns`` of each side."""
    pod = files / "pod.yaml"
    pod.write_text(POD.format(name="p1", scheduler=SCHEDULER))
    bad = files / "bad.yaml"
    bad.write_text(BAD_POD)
    workloads = files / "workloads.yaml"
    workloads.write_text(WORKLOADS)
    applied = files / "applied.yaml"
    applied.write_text(POD.format(name="p2", scheduler=SCHEDULER))
    deploy_svc = files / "deploy-svc.yaml"
    deploy_svc.write_text(DEPLOY_AND_SERVICE)
    rbac = files / "rbac.yaml"
    rbac.write_text(ROLE_AND_BINDING)
    secrets = files / "secrets.yaml"
    secrets.write_text(SECRETS)
    bad_secret = files / "bad-secret.yaml"
    bad_secret.write_text(BAD_SECRET)
    changed = files / "changed.yaml"
    changed.write_text(POD.format(name="p2", scheduler=SCHEDULER).replace("app: demo", "app: demo, tier: two"))
    n = ["-n", ns]
    return [
        ("create pod", ["create", "-f", str(pod), *n]),
        ("create pod again (AlreadyExists)", ["create", "-f", str(pod), *n]),
        ("create invalid pod (422)", ["create", "-f", str(bad), *n]),
        ("get pods (table)", ["get", "pods", *n]),
        ("get pods -o wide", ["get", "pods", "-o", "wide", *n]),
        ("get pod -o jsonpath limits", ["get", "pod", "p1", "-o", "jsonpath={.spec.containers[0].resources.limits}",
                                        *n]),
        ("get pod -o jsonpath requests (defaulted from limits)",
         ["get", "pod", "p1", "-o", "jsonpath={.spec.containers[0].resources.requests}", *n]),
        ("get pod -o jsonpath defaults", ["get", "pod", "p1", "-o", "jsonpath={.spec.restartPolicy} "
                                          "{.spec.dnsPolicy} {.spec.terminationGracePeriodSeconds} "
                                          "{.status.phase} {.status.qosClass}", *n]),
        ("get missing pod (404)", ["get", "pod", "nope", *n]),
        ("get pods -l", ["get", "pods", "-l", "app=demo", "-o", "name", *n]),
        ("get pods --field-selector", ["get", "pods", "--field-selector", "status.phase=Pending", "-o", "name", *n]),
        ("describe pod", ["describe", "pod", "p1", *n]),
        ("apply (create)", ["apply", "-f", str(applied), *n]),
        ("apply (unchanged)", ["apply", "-f", str(applied), *n]),
        ("apply (configured)", ["apply", "-f", str(changed), *n]),
        ("get pod -o jsonpath applied labels", ["get", "pod", "p2", "-o", "jsonpath={.metadata.labels}", *n]),
        ("label", ["label", "pod", "p1", "team=a", *n]),
        ("label without --overwrite", ["label", "pod", "p1", "team=b", *n]),
        ("label --overwrite", ["label", "pod", "p1", "team=b", "--overwrite", *n]),
        ("annotate", ["annotate", "pod", "p1", "note=x", *n]),
        ("patch merge", ["patch", "pod", "p1", "-p", '{"metadata":{"labels":{"x":"y"}}}', *n]),
        ("patch json image", ["patch", "pod", "p1", "--type=json", "-p",
                              '[{"op":"replace","path":"/spec/containers/0/image","value":"other"}]', *n]),
        ("patch forbidden field (422)", ["patch", "pod", "p1", "--type=merge", "-p",
                                         '{"spec":{"restartPolicy":"Never"}}', *n]),
        ("patch missing pod (404)", ["patch", "pod", "nope", "-p", '{"metadata":{"labels":{"x":"y"}}}', *n]),
        ("get pod -o jsonpath labels", ["get", "pod", "p1", "-o", "jsonpath={.metadata.labels}", *n]),
        ("logs of an unscheduled pod", ["logs", "p1", *n]),
        ("auth can-i create pods", ["auth", "can-i", "create", "pods", *n]),
        ("auth can-i create nodes", ["auth", "can-i", "create", "nodes"]),
        ("get events (header)", ["get", "events", *n]),
        ("get configmaps (header)", ["get", "configmaps", *n]),
        ("create configmap", ["create", "configmap", "c1", "--from-literal=a=b", *n]),
        ("get configmap -o jsonpath", ["get", "configmap", "c1", "-o", "jsonpath={.data}", *n]),
        ("apply Secrets (stringData, a tls one missing its key, an immutable one, a bad docker config)",
         ["apply", "-f", str(secrets), *n]),
        ("create secret generic (protobuf)", ["create", "secret", "generic", "g1", "--from-literal=k=v", *n]),
        ("create secret docker-registry", ["create", "secret", "docker-registry", "r1", "--docker-server=x.io",
                                           "--docker-username=u", "--docker-password=p", *n]),
        ("create a Secret that is not base64 (400)", ["create", "-f", str(bad_secret), *n]),
        ("get secrets (table)", ["get", "secrets", *n]),
        ("get secret -o jsonpath (stringData merged)", ["get", "secret", "s1", "-o",
                                                        "jsonpath={.type} {.data} {.stringData}", *n]),
        ("get secrets --field-selector type", ["get", "secrets", "--field-selector", "type=Opaque", "-o", "name",
                                               *n]),
        ("patch an immutable Secret's data (422)", ["patch", "secret", "frozen", "-p", '{"data":{"a":"Yg=="}}', *n]),
        ("patch a Secret's type (422)", ["patch", "secret", "s1", "-p", '{"type":"kubernetes.io/tls"}', *n]),
        ("delete secrets", ["delete", "secrets", "--all", *n]),
        ("create deployment", ["create", "deployment", "d1", "--image=mockgpu/workload", "--replicas=0", *n]),
        ("get deployment (table)", ["get", "deployment", "d1", *n]),
        ("rollout status", ["rollout", "status", "deployment/d1", "--timeout=30s", *n]),
        ("get deployment -o jsonpath conditions", ["get", "deployment", "d1", "-o",
                                                   "jsonpath={.status.conditions[*].type}", *n]),
        ("create job", ["create", "job", "j1", "--image=mockgpu/workload", "--", "sleep", "1", *n]),
        ("get job -o jsonpath spec", ["get", "job", "j1", "-o", "jsonpath={.spec.completions} {.spec.parallelism} "
                                      "{.spec.backoffLimit} {.spec.completionMode} {.spec.suspend}", *n]),
        ("apply a StatefulSet and a DaemonSet", ["apply", "-f", str(workloads), *n]),
        ("get statefulset (table)", ["get", "statefulset", "web", *n]),
        ("get daemonset (table)", ["get", "daemonset", "agent", *n]),
        ("rollout status statefulset", ["rollout", "status", "statefulset/web", "--timeout=30s", *n]),
        ("rollout status daemonset", ["rollout", "status", "daemonset/agent", "--timeout=30s", *n]),
        ("create cronjob", ["create", "cronjob", "c1", "--image=mockgpu/workload", "--schedule=*/5 * * * *",
                            "--", "sleep", "1", *n]),
        ("get cronjob (table)", ["get", "cronjob", "c1", *n]),
        ("create cronjob with a bad schedule (422)", ["create", "cronjob", "c2", "--image=x",
                                                      "--schedule=not a schedule", *n]),
        ("apply a Deployment and its Service", ["apply", "-f", str(deploy_svc), *n]),
        ("get service (table)", ["get", "service", "web", *n]),
        ("get service -o jsonpath defaults", ["get", "service", "web", "-o", "jsonpath={.spec.type} "
                                              "{.spec.sessionAffinity} {.spec.ipFamilyPolicy} {.spec.ipFamilies} "
                                              "{.spec.internalTrafficPolicy} {.spec.ports[0].protocol} "
                                              "{.spec.ports[0].targetPort} {.status}", *n]),
        ("apply the Service again (unchanged)", ["apply", "-f", str(deploy_svc), *n]),
        ("create service clusterip", ["create", "service", "clusterip", "s1", "--tcp=80:8080", *n]),
        ("create service nodeport with a node port", ["create", "service", "nodeport", "s2", "--tcp=80:8080",
                                                      "--node-port=30080", *n]),
        ("create service nodeport, port taken (422)", ["create", "service", "nodeport", "s3", "--tcp=81:8080",
                                                       "--node-port=30080", *n]),
        ("create service nodeport, port out of range (422)", ["create", "service", "nodeport", "s3", "--tcp=81",
                                                              "--node-port=80", *n]),
        ("create service clusterip, address taken (422)", ["create", "service", "clusterip", "s4",
                                                           "--clusterip=10.96.0.1", "--tcp=80", *n]),
        ("create service clusterip, address outside the range (422)", ["create", "service", "clusterip", "s4",
                                                                       "--clusterip=10.0.0.5", "--tcp=80", *n]),
        ("create service headless", ["create", "service", "clusterip", "s5", "--clusterip=None", *n]),
        ("create service externalname", ["create", "service", "externalname", "s6", "--external-name=example.com",
                                         *n]),
        ("create service loadbalancer", ["create", "service", "loadbalancer", "s7", "--tcp=443", *n]),
        ("create service with a duplicate port (422)", ["create", "service", "clusterip", "s8", "--tcp=80:80",
                                                        "--tcp=80:81", *n]),
        ("create service with a bad name (422)", ["create", "service", "clusterip", "Bad.Name", "--tcp=80", *n]),
        ("get services (table)", ["get", "services", *n]),
        ("get services --field-selector spec.type", ["get", "services", "--field-selector", "spec.type=NodePort",
                                                     "-o", "name", *n]),
        ("patch service type NodePort", ["patch", "service", "s1", "-p", '{"spec":{"type":"NodePort"}}', *n]),
        ("get service -o jsonpath node port", ["get", "service", "s1", "-o",
                                               "jsonpath={.spec.type} {.spec.externalTrafficPolicy}", *n]),
        ("patch service clusterIP (422)", ["patch", "service", "s1", "-p",
                                           '{"spec":{"clusterIP":"10.96.77.77","clusterIPs":["10.96.77.77"]}}', *n]),
        ("patch service type ExternalName without a name (422)", ["patch", "service", "s1", "-p",
                                                                  '{"spec":{"type":"ExternalName"}}', *n]),
        ("delete services", ["delete", "services", "--all", *n]),
        ("get services after delete", ["get", "services", "-o", "name", *n]),
        ("delete deployment web", ["delete", "deployment", "web", *n]),
        ("apply a Role and a RoleBinding", ["apply", "-f", str(rbac), *n]),
        ("get role,rolebinding", ["get", "role,rolebinding", *n]),
        ("get rolebinding -o wide", ["get", "rolebinding", "alice-reads-pods", "-o", "wide", *n]),
        ("auth can-i list pods as alice", ["auth", "can-i", "list", "pods", "--as=alice", *n]),
        ("auth can-i get pods/log as alice", ["auth", "can-i", "get", "pods", "--subresource=log", "--as=alice",
                                              *n]),
        ("auth can-i create pods as alice", ["auth", "can-i", "create", "pods", "--as=alice", *n]),
        ("auth can-i list pods as bob", ["auth", "can-i", "list", "pods", "--as=bob", *n]),
        ("auth can-i list pods as alice in default", ["auth", "can-i", "list", "pods", "--as=alice", "-n",
                                                      "default"]),
        ("auth can-i --list as alice", ["auth", "can-i", "--list", "--as=alice", *n]),
        ("get pods as alice", ["get", "pods", "--as=alice", "-o", "name", *n]),
        ("get pods as bob (403)", ["get", "pods", "--as=bob", *n]),
        ("get pod as bob (403)", ["get", "pod", "p2", "--as=bob", *n]),
        ("delete pod as alice (403)", ["delete", "pod", "p2", "--as=alice", "--wait=false", *n]),
        ("get nodes as alice (403)", ["get", "nodes", "--as=alice"]),
        ("get deployments as a group member (403)", ["get", "deployments", "--as=carol", "--as-group=team-a", *n]),
        ("create rolebinding for a group", ["create", "rolebinding", "team-a-view", "--clusterrole=view",
                                            "--group=team-a", *n]),
        ("get deployments as a group member", ["get", "deployments", "--as=carol", "--as-group=team-a", "-o",
                                               "name", *n]),
        ("auth can-i create deployments as a group member", ["auth", "can-i", "create", "deployments",
                                                             "--as=carol", "--as-group=team-a", *n]),
        ("create role with kubectl", ["create", "role", "cm-editor", "--verb=get,update", "--resource=configmaps",
                                      *n]),
        ("create rolebinding for a service account", ["create", "rolebinding", "sa-cm", "--role=cm-editor",
                                                      f"--serviceaccount={ns}:default", *n]),
        ("auth can-i update configmaps as the service account",
         ["auth", "can-i", "update", "configmaps", f"--as=system:serviceaccount:{ns}:default", *n]),
        ("create role without verbs (422)", ["create", "role", "bad", "--verb=get", "--resource=nosuchthing", *n]),
        ("patch rolebinding roleRef (422)", ["patch", "rolebinding", "alice-reads-pods", "--type=merge", "-p",
                                             '{"roleRef":{"name":"other"}}', *n]),
        ("get clusterrole view (aggregated rules)", ["get", "clusterrole", "view", "-o",
                                                     "jsonpath={.rules[*].resources}"]),
        ("get clusterrolebinding cluster-admin -o wide", ["get", "clusterrolebinding", "cluster-admin", "-o",
                                                          "wide"]),
        ("delete the RBAC objects", ["delete", "role,rolebinding", "--all", *n]),
        *ssa_battery(n, files),
        ("delete statefulset, daemonset, cronjob", ["delete", "statefulset/web", "daemonset/agent", "cronjob/c1",
                                                    *n]),
        ("delete deployment", ["delete", "deployment", "d1", *n]),
        ("delete job", ["delete", "job", "j1", "--wait=false", *n]),
        ("delete pod", ["delete", "pod", "p1", "--wait=false", *n]),
        ("wait for delete", ["wait", "--for=delete", "pod/p1", "--timeout=20s", *n]),
        ("get deleted pod (404)", ["get", "pod", "p1", *n]),
    ]


def run_kubectl(path: str, kubeconfig: Path, argv: list[str]) -> tuple[int, str, str]:
    done = subprocess.run([path, "--kubeconfig", str(kubeconfig), *argv], capture_output=True, text=True,
                          timeout=60)
    return done.returncode, normalise(done.stdout), normalise(done.stderr)


def _ns(side_client: Any, name: str) -> None:
    core = client.CoreV1Api(side_client)
    try:
        core.create_namespace({"metadata": {"name": name}})
    except ApiException as exc:
        if exc.status != 409:
            raise
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # upstream refuses pods until the namespace's ServiceAccount exists
        try:
            core.read_namespaced_service_account("default", name)
            return
        except ApiException as exc:
            if exc.status != 404:
                raise
            time.sleep(0.1)
    raise AssertionError(f"no default ServiceAccount in namespace {name}")


@pytest.mark.parametrize("version,path", kubectl_versions(), ids=[v for v, _ in kubectl_versions()])
def test_kubectl_battery(report, upstream_cluster, embedded_cluster, tmp_path, version, path):
    if not Path(path).exists():
        pytest.fail(f"kubectl {version} missing at {path}")
    ns = "kubectl-" + version.replace(".", "-")
    for c in (embedded_cluster, upstream_cluster):
        _ns(c.api_client(), ns)
    open_ = []
    pool = ThreadPoolExecutor(1)  # the upstream side beside this thread: a case's two kubectl runs are independent
    for case, argv in kubectl_battery(ns, tmp_path):
        up_run = pool.submit(run_kubectl, path, upstream_cluster.kubeconfig, argv)
        emb = run_kubectl(path, embedded_cluster.kubeconfig, argv)
        up = up_run.result()
        diffs = []
        if up[0] != emb[0]:
            diffs.append(("exit code", f"embedded {emb[0]} != upstream {up[0]}"))
        if up[1] != emb[1]:
            diffs.append(("stdout", f"embedded {emb[1]!r} != upstream {up[1]!r}"))
        if up[2] != emb[2]:
            diffs.append(("stderr", f"embedded {emb[2]!r} != upstream {up[2]!r}"))
        for kind, detail in report.add("kubectl", f"kubectl {version}: {case}", diffs):
            open_.append(f"{case}: {kind}: {detail}")
    pool.shutdown()
    assert not open_, "\n".join(open_)


# -- the official client ----------------------------------------------------------------------------
def outcome(call) -> dict[str, Any]:  # noqa: ANN001
    """What a user can observe of one call: status code, Status reason, message, causes."""
    try:
        result = call()
    except ApiException as exc:
        body: dict[str, Any] = {}
        try:
            body = json.loads(exc.body or "{}")
        except ValueError:
            pass
        causes = sorted((c.get("reason"), c.get("field")) for c in (body.get("details") or {}).get("causes") or [])
        return {"code": exc.status, "reason": body.get("reason"), "message": normalise(body.get("message") or ""),
                "causes": causes}
    return {"code": 200, "result": result}


def client_battery(api: Any, ns: str) -> list[tuple[str, dict[str, Any]]]:
    core = client.CoreV1Api(api)
    out: list[tuple[str, dict[str, Any]]] = []

    def case(name: str, call, view=lambda r: r) -> Any:  # noqa: ANN001
        o = outcome(call)
        if "result" in o:
            o = {"code": 200, "view": view(o["result"])}
        out.append((name, o))
        return o

    meta = lambda o: o.metadata  # noqa: E731
    case("create configmap", lambda: core.create_namespaced_config_map(
        ns, {"metadata": {"name": "c1", "labels": {"set": "a"}}, "data": {"k": "v"}}), lambda o: meta(o).name)
    first = core.read_namespaced_config_map("c1", ns)
    case("update with the current resourceVersion", lambda: core.replace_namespaced_config_map(
        "c1", ns, {"metadata": {"name": "c1", "resourceVersion": first.metadata.resource_version},
                   "data": {"k": "v2"}}), lambda o: o.data)
    case("update with a stale resourceVersion (409)", lambda: core.replace_namespaced_config_map(
        "c1", ns, {"metadata": {"name": "c1", "resourceVersion": first.metadata.resource_version},
                   "data": {"k": "v3"}}))
    case("create with an invalid name (422 causes)", lambda: core.create_namespaced_config_map(
        ns, {"metadata": {"name": "Bad_Name"}, "data": {}}))
    case("create a pod without containers (422 causes)", lambda: core.create_namespaced_pod(
        ns, {"metadata": {"name": "bad"}, "spec": {"containers": []}}))
    case("create a pod with a GPU request but no limit (422)", lambda: core.create_namespaced_pod(
        ns, {"metadata": {"name": "bad2"}, "spec": {"containers": [{"name": "c", "image": "x", "resources": {
            "requests": {"nvidia.com/gpu": "1"}}}]}}))
    case("create a pod whose GPU request differs from its limit (422)", lambda: core.create_namespaced_pod(
        ns, {"metadata": {"name": "bad3"}, "spec": {"containers": [{"name": "c", "image": "x", "resources": {
            "requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}}}]}}))
    case("create a pod with a fractional GPU (422)", lambda: core.create_namespaced_pod(
        ns, {"metadata": {"name": "bad4"}, "spec": {"containers": [{"name": "c", "image": "x", "resources": {
            "limits": {"nvidia.com/gpu": "500m"}}}]}}))
    case("get a missing configmap (404)", lambda: core.read_namespaced_config_map("nope", ns))
    case("delete a missing configmap (404)", lambda: core.delete_namespaced_config_map("nope", ns))
    case("dry-run create", lambda: core.create_namespaced_config_map(
        ns, {"metadata": {"name": "dry"}}, dry_run="All"), lambda o: meta(o).name)
    case("dry-run object not stored (404)", lambda: core.read_namespaced_config_map("dry", ns))
    for i in range(5):
        core.create_namespaced_config_map(ns, {"metadata": {"name": f"page-{i}", "labels": {"set": "page"}}})
    page = core.list_namespaced_config_map(ns, label_selector="set=page", limit=2)
    case("list with limit=2", lambda: page, lambda o: ([i.metadata.name for i in o.items], bool(o.metadata._continue),
                                                       o.metadata.remaining_item_count))
    names = [i.metadata.name for i in page.items]
    token = page.metadata._continue
    while token:
        nxt = core.list_namespaced_config_map(ns, label_selector="set=page", limit=2, _continue=token)
        names += [i.metadata.name for i in nxt.items]
        token = nxt.metadata._continue
    out.append(("follow continue tokens to the end", {"code": 200, "view": names}))
    case("continue with a garbage token (400/410)", lambda: core.list_namespaced_config_map(
        ns, limit=2, _continue="garbage"))
    # watch: from a listed resourceVersion, the next change arrives; bookmarks ignored
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "watched"}})
    events = []
    for ev in watch.Watch().stream(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=2):
        events.append((ev["type"], ev["object"].metadata.name))
        if ev["object"].metadata.name == "watched":
            break
    out.append(("watch resumes from a resourceVersion", {"code": 200, "view": events[-1:]}))
    case("watch from resourceVersion 1 (410 or replay)", lambda: _first_watch_event(core, ns, "1"))
    # finalizers and graceful deletion
    core.create_namespaced_config_map(ns, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    case("delete an object with a finalizer", lambda: core.delete_namespaced_config_map("held", ns),
         lambda o: (o.status if hasattr(o, "status") else None))
    case("it stays, with a deletionTimestamp", lambda: core.read_namespaced_config_map("held", ns),
         lambda o: (bool(o.metadata.deletion_timestamp), o.metadata.finalizers))
    case("adding a finalizer while deleting (422)", lambda: core.patch_namespaced_config_map(
        "held", ns, {"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}))
    core.patch_namespaced_config_map("held", ns, {"metadata": {"finalizers": None}})
    case("gone once its finalizers are removed (404)", lambda: _eventually_missing(core, "held", ns))
    core.create_namespaced_pod(ns, {"metadata": {"name": "bound"}, "spec": {
        "nodeName": "conformance-api-node", "containers": [{"name": "c", "image": "x"}]}})
    case("graceful delete of a bound pod", lambda: core.delete_namespaced_pod("bound", ns),
         lambda o: (bool(o.metadata.deletion_timestamp), o.metadata.deletion_grace_period_seconds))
    case("the pod waits for its kubelet", lambda: core.read_namespaced_pod("bound", ns),
         lambda o: (bool(o.metadata.deletion_timestamp), o.metadata.deletion_grace_period_seconds,
                    o.spec.termination_grace_period_seconds))
    case("delete with gracePeriodSeconds=0", lambda: core.delete_namespaced_pod("bound", ns, grace_period_seconds=0),
         lambda o: o.metadata.name)
    case("then it is gone (404)", lambda: _eventually_missing(core, "bound", ns, kind="pod"))
    core.create_namespaced_pod(ns, {"metadata": {"name": "free"}, "spec": {
        "schedulerName": SCHEDULER, "containers": [{"name": "c", "image": "x"}]}})
    case("delete of an unbound pod is immediate", lambda: (core.delete_namespaced_pod("free", ns),
                                                           _eventually_missing(core, "free", ns, kind="pod"))[1])
    case("binding a pod to a node (pods/binding)", lambda: _bind(core, ns))
    case("get with an unknown namespace (404)", lambda: core.read_namespaced_config_map("c1", "no-such-ns"))
    _apply_cases(core, ns, case)
    out += field_validation_cases(api, ns)
    out += secret_cases(api, ns)
    out += flowcontrol_cases(api)
    return out


def flowcontrol_cases(api: Any) -> list[tuple[str, dict[str, Any]]]:
    """FlowSchemas and PriorityLevelConfigurations (apiserver/flowcontrol.py): upstream's bootstrap objects, defaults,
    validation; raw JSON bodies (the client's models refuse some of these before sending)."""
    fc = client.FlowcontrolApiserverV1Api(api)
    base = "/apis/flowcontrol.apiserver.k8s.io/v1"
    out: list[tuple[str, dict[str, Any]]] = [
        ("flowcontrol: the bootstrap FlowSchemas", {"view": sorted(
            (i.metadata.name, str(i.spec.to_dict())) for i in fc.list_flow_schema().items)}),
        ("flowcontrol: the bootstrap priority levels", {"view": sorted(
            (i.metadata.name, str(i.spec.to_dict())) for i in fc.list_priority_level_configuration().items)})]

    def case(name: str, method: str, path: str, body: dict[str, Any],
             content_type: str = "application/json") -> None:
        out.append((f"flowcontrol: {name}", _raw(api, method, base + path, json.dumps(body), content_type)))

    subject = {"kind": "User", "user": {"name": "someone"}}
    rule = {"subjects": [subject], "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}

    def fs(name: str, **spec: Any) -> dict[str, Any]:
        return {"metadata": {"name": name}, "spec": {"priorityLevelConfiguration": {"name": "global-default"},
                                                     "rules": [rule], **spec}}

    def plc(name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"name": name}, "spec": spec}

    case("a FlowSchema", "POST", "/flowschemas", fs("fc-default"))
    out.append(("flowcontrol: its defaults", {"view": fc.read_flow_schema("fc-default").spec.to_dict()}))
    case("matchingPrecedence 1 (422)", "POST", "/flowschemas", fs("fc-one", matchingPrecedence=1))
    case("matchingPrecedence over 10000 (422)", "POST", "/flowschemas", fs("fc-big", matchingPrecedence=10001))
    case("a rule without subjects or rules (422)", "POST", "/flowschemas", {
        "metadata": {"name": "fc-empty"}, "spec": {"priorityLevelConfiguration": {"name": "x"}, "rules": [{}]}})
    case("no priority level, a bad distinguisher (422)", "POST", "/flowschemas", fs(
        "fc-nopl", priorityLevelConfiguration={"name": ""}, distinguisherMethod={"type": "ByPod"}))
    case("resource rules, each wrong (422)", "POST", "/flowschemas", fs("fc-rr", rules=[{
        "subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": "a"}, "user": {"name": "b"}},
                     {"kind": "Robot"}, {"kind": "Group"}],
        "resourceRules": [{"verbs": ["get", "fly"], "apiGroups": ["*", "apps"], "resources": [],
                           "namespaces": ["Bad_NS"]}],
        "nonResourceRules": [{"verbs": ["*", "get"], "nonResourceURLs": ["no-slash", "/a/*/b", "/a b", ""]}]}]))
    case("the mandatory exempt FlowSchema changed (422)", "PATCH", "/flowschemas/exempt",
         {"spec": {"matchingPrecedence": 2}}, "application/merge-patch+json")
    case("a suggested FlowSchema changed", "PATCH", "/flowschemas/probes",
         {"spec": {"matchingPrecedence": 3}}, "application/merge-patch+json")
    case("a limited priority level", "POST", "/prioritylevelconfigurations", plc(
        "fc-limited", {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}))
    out.append(("flowcontrol: its defaults (priority level)",
                {"view": fc.read_priority_level_configuration("fc-limited").spec.to_dict()}))
    case("a queuing configuration out of bounds (422)", "POST", "/prioritylevelconfigurations", plc(
        "fc-bad", {"type": "Limited", "limited": {"nominalConcurrencyShares": -1, "lendablePercent": 101,
                                                  "borrowingLimitPercent": -2,
                                                  "limitResponse": {"type": "Queue", "queuing": {
                                                      "queues": 128, "handSize": 129, "queueLengthLimit": -1}}}}))
    case("hand size past the entropy bound (422)", "POST", "/prioritylevelconfigurations", plc(
        "fc-entropy", {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {
            "queues": 100000, "handSize": 10}}}}))
    case("type Exempt on another name (422)", "POST", "/prioritylevelconfigurations", plc(
        "fc-exempt", {"type": "Exempt", "limited": {"limitResponse": {"type": "Reject"}}}))
    case("a bogus type (422)", "POST", "/prioritylevelconfigurations", plc("fc-bogus", {"type": "Bogus"}))
    case("Reject with queuing, no type (422)", "POST", "/prioritylevelconfigurations", plc(
        "fc-reject", {"type": "Limited", "exempt": {}, "limited": {"lendablePercent": 5, "limitResponse": {
            "type": "Reject", "queuing": {"queues": 1}}}}))
    case("no type, no limit response type (422)", "POST", "/prioritylevelconfigurations", plc("fc-notype", {}))
    case("the mandatory catch-all level changed (422)", "PATCH", "/prioritylevelconfigurations/catch-all",
         {"spec": {"limited": {"nominalConcurrencyShares": 6}}}, "application/merge-patch+json")
    case("a status with a duplicate condition (422)", "PATCH", "/flowschemas/fc-default/status",
         {"status": {"conditions": [{"type": "Dangling"}, {"type": "Dangling"}, {"status": "True"}]}},
         "application/merge-patch+json")
    return out


def secret_cases(api: Any, ns: str) -> list[tuple[str, dict[str, Any]]]:
    """Secrets (secretstrategy.py): defaults, stringData, each built-in type's required keys, immutability."""
    core = client.CoreV1Api(api)
    out: list[tuple[str, dict[str, Any]]] = []
    view = lambda s: (s.type, s.data, s.string_data, s.immutable)  # noqa: E731

    def case(name: str, body: dict[str, Any], call: Any = None) -> None:
        o = outcome(call or (lambda: core.create_namespaced_secret(ns, body)))
        out.append((f"secret: {name}", {"code": 200, "view": view(o["result"])} if "result" in o else o))

    def sec(name: str, **fields: Any) -> dict[str, Any]:
        return {"metadata": {"name": name}, **fields}

    case("defaults and stringData over data", sec("s1", data={"a": "eA==", "b": "b2xk"}, string_data={"b": "new"}))
    case("a key that is not a config key (422)", sec("s2", data={"a b": "eA=="}))
    case("tls without its key (422)", sec("s3", type="kubernetes.io/tls", data={"tls.crt": "eA=="}))
    case("basic-auth with neither field (422)", sec("s4", type="kubernetes.io/basic-auth"))
    case("ssh-auth with an empty key (422)", sec("s5", type="kubernetes.io/ssh-auth", data={"ssh-privatekey": ""}))
    case("a service-account token without its annotation (422)", sec("s6", type="kubernetes.io/service-account-token"))
    case("a docker config that is an array (422)", sec("s7", type="kubernetes.io/dockerconfigjson",
                                                         string_data={".dockerconfigjson": "[1]"}))
    case("an empty docker config (422)", sec("s8", type="kubernetes.io/dockercfg", string_data={".dockercfg": ""}))
    case("over 1 MiB (422)", sec("s9", string_data={"a": "x" * (1024 * 1024), "b": "y"}))
    case("a custom type", sec("s10", type="example.com/x", immutable=True, string_data={"k": "v"}))
    frozen = core.read_namespaced_secret("s10", ns) if out[-1][1]["code"] == 200 else None
    if frozen is not None:
        frozen.type, frozen.immutable, frozen.data = "example.com/y", False, {"k": "dw=="}
    case("an immutable one changed (422)", {}, lambda: core.replace_namespaced_secret("s10", ns, frozen))
    return out


# -- field validation: raw bodies (duplicate keys cannot be built from a dict), Warning headers compared ----------
DEPLOYMENT = """{"apiVersion": "apps/v1", "kind": "Deployment",
 "metadata": {"name": "%(name)s", "labels": {"app": "x"}%(meta)s},
 "spec": {"unknownField": "foo", "replicas": 2, "replicas": 3, "bogus": 1, "bogus": 2,
  "selector": {"matchLabels": {"app": "x"}, "matchLabels": {"app": "x"}},
  "template": {"metadata": {"labels": {"app": "x", "app": "x"}, "extra": 1},
               "spec": {"containers": [{"name": "c", "image": "busybox", "image": "busybox:1"}]}}}}"""
DEPLOYMENT_YAML = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: %(name)s
  name: %(name)s
spec:
  replicas: 1
  unknownField: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: c
        image: busybox
        image: busybox:1
"""


def _raw(api: Any, method: str, path: str, body: str, content_type: str = "application/json") -> dict[str, Any]:
    """One request with a body sent as given: code, Status message, and every ``Warning`` header."""
    auth = api.configuration.auth_settings()["BearerToken"]
    r = api.rest_client.pool_manager.request(method, api.configuration.host + path, body=body.encode(),
                                             headers={"Content-Type": content_type, "Accept": "application/json",
                                                      auth["key"]: auth["value"]})
    data = json.loads(r.data or b"{}")
    message = normalise(data.get("message") or "") if data.get("kind") == "Status" else ""
    # a patch's 422 prints the whole patched object, whose status the controllers write at their own pace
    message = re.sub(r'Invalid value: ".*": (strict decoding error)', r"Invalid value: <the patched object>: \1",
                     message)
    return {"code": r.status, "message": message, "warnings": r.headers.getlist("Warning")}


def field_validation_cases(api: Any, ns: str) -> list[tuple[str, dict[str, Any]]]:
    deps = f"/apis/apps/v1/namespaces/{ns}/deployments"
    out: list[tuple[str, dict[str, Any]]] = []
    for label, query, name, meta in [
        ("Strict", "?fieldValidation=Strict", "fv-strict", ""),
        ("Warn", "?fieldValidation=Warn", "fv-warn", ""),
        ("absent (Warn)", "", "fv-default", ""),
        ("Ignore", "?fieldValidation=Ignore", "fv-ignore", ""),
        ("Strict, unknown metadata field", "?fieldValidation=Strict", "fv-meta", ', "unknownMeta": "foo"'),
        ("Warn, unknown metadata field", "", "fv-meta", ', "unknownMeta": "foo"'),
        ("bogus (422)", "?fieldValidation=bogus", "fv-bogus", ""),
    ]:
        out.append((f"field validation: create, unknown and duplicate fields, {label}",
                    _raw(api, "POST", deps + query, DEPLOYMENT % {"name": name, "meta": meta})))
    update = DEPLOYMENT % {"name": "fv-warn", "meta": ""}
    out.append(("field validation: update with unknown and duplicate fields, Strict",
                _raw(api, "PUT", f"{deps}/fv-warn?fieldValidation=Strict", update)))
    out.append(("field validation: update with unknown and duplicate fields, Warn",
                _raw(api, "PUT", f"{deps}/fv-warn", update)))
    for ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
        patch = '{"spec": {"replicas": 1, "replicas": 2, "paused": false, "nope": 1}}'
        for label, query in (("Strict", "?fieldValidation=Strict"), ("Warn", "")):
            out.append((f"field validation: {ctype.split('/')[1]} with unknown and duplicate fields, {label}",
                        _raw(api, "PATCH", f"{deps}/fv-warn{query}", patch, ctype)))
    for label, query, name in (("Strict", "?fieldValidation=Strict", "fv-yaml-strict"), ("Warn", "", "fv-yaml")):
        out.append((f"field validation: YAML body with duplicate keys and an unknown field, {label}",
                    _raw(api, "POST", deps + query, DEPLOYMENT_YAML % {"name": name}, "application/yaml")))
    out.append(("field validation: YAML body whose label is y (a bool to goyaml v2: 400)",
                _raw(api, "POST", deps, DEPLOYMENT_YAML.replace("web", "y") % {"name": "fv-yaml-y"},
                     "application/yaml")))
    return out


APPLY_PATCH = "application/apply-patch+yaml"


def _apply_cases(core: Any, ns: str, case: Any) -> None:
    """Server-side apply's answers to bodies kubectl never sends: the options' and the body's errors, conflicts'
    causes, force, and the uid checks (the official client sends the apply body as JSON, which is YAML)."""
    def cm(name: str = "applied", **meta: Any) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}

    def apply(body: Any, name: str = "applied", **kw: Any) -> Any:
        return lambda: core.patch_namespaced_config_map(name, ns, body, _content_type=APPLY_PATCH, **kw)

    def view(o: Any) -> Any:
        return o.data, sorted((e.manager, e.operation, e.subresource) for e in o.metadata.managed_fields or [])
    case("apply without a fieldManager (422)", apply({**cm(), "data": {"k": "v"}}))
    case("apply creates", apply({**cm(), "data": {"k": "v"}}, field_manager="m"), view)
    case("apply of another kind (400)", apply({**cm(), "kind": "Secret"}, field_manager="m"))
    case("apply of another version (400)", apply({**cm(), "apiVersion": "v2"}, field_manager="m"))
    case("apply without a kind (400)", apply({"metadata": {"name": "applied"}}, field_manager="m"))
    case("apply naming another object (400)", apply(cm("other"), field_manager="m"))
    case("apply without a name (the live object's)", apply({"apiVersion": "v1", "kind": "ConfigMap"},
                                                           field_manager="m"), view)
    case("apply in another namespace (400)", apply(cm(namespace="other"), field_manager="m"))
    case("apply with managedFields (400)", apply(cm(managedFields=[]), field_manager="m"))
    case("apply with an undeclared field (500)", apply({**cm(), "bogus": 1}, field_manager="m"))
    case("apply by another manager (409 with causes)", apply({**cm(), "data": {"k": "w"}}, field_manager="n"), view)
    case("apply by another manager, forced", apply({**cm(), "data": {"k": "w"}}, field_manager="n", force=True),
         view)
    case("force on a merge patch (422)", lambda: core.patch_namespaced_config_map("applied", ns, {"data": {}},
                                                                                   force=True))
    case("apply with a too long fieldManager (422)", apply(cm(), field_manager="x" * 129))
    case("apply creating with a uid (409)", apply(cm("absent", uid="123"), "absent", field_manager="m"))
    case("apply changing the uid (422)", apply(cm(uid="123"), field_manager="m"))
    case("apply with a stale resourceVersion (409)", apply(cm(resourceVersion="1"), field_manager="m"))


def _first_watch_event(core: Any, ns: str, rv: str) -> str:
    for ev in watch.Watch().stream(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=2):
        return ev["type"]
    return "none"


def _eventually_missing(core: Any, name: str, ns: str, kind: str = "configmap") -> Any:
    read = core.read_namespaced_pod if kind == "pod" else core.read_namespaced_config_map
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            read(name, ns)
        except ApiException:
            raise
        time.sleep(0.05)
    return "still present"


def _bind(core: Any, ns: str) -> Any:
    core.create_namespaced_pod(ns, {"metadata": {"name": "tobind"}, "spec": {
        "schedulerName": SCHEDULER, "containers": [{"name": "c", "image": "x"}]}})
    core.create_namespaced_binding(ns, {"metadata": {"name": "tobind"},
                                        "target": {"apiVersion": "v1", "kind": "Node", "name": "n-bind"}},
                                   _preload_content=False)
    pod = core.read_namespaced_pod("tobind", ns)
    conds = {c.type: c.status for c in pod.status.conditions or []}
    return pod.spec.node_name, conds.get("PodScheduled")


def test_client_battery(report, upstream_cluster, embedded_cluster):
    ns = "client-battery"
    results = {}
    for name, c in (("embedded", embedded_cluster), ("upstream", upstream_cluster)):
        _ns(c.api_client(), ns)
        results[name] = client_battery(c.api_client(), ns)
    report.compare("client", results["embedded"], results["upstream"])
